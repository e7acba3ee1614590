/* main.c - signalr-replay: see rp_cli.c and docs/FIXTURES.md "Replaying and comparing". */
#include "rp_cli.h"

int main(int argc, char **argv)
{
    return rp_cli_main(argc, argv);
}
