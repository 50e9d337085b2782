/* The AMX kernel with its tile instructions emulated, so the test runs its logic anywhere. */
#define MAG_GEMM_AMX_EMULATE
#include "cpu/gemm/bf16_amx.c"
