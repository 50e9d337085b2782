int mgb_dummy(void);int mgb_dummy(void){return 0;}
