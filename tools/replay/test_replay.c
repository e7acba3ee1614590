/* test_replay.c - placeholder for the comparison rules' unit tests (filled below). */
#include "check.h"
int main(void) { CHECK(1); return test_main_result("test_replay"); }
