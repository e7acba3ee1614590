/* rp_cli.h - signalr-replay's command line: the check, ab and load modes and --help. */
#ifndef RP_CLI_H
#define RP_CLI_H

/* Exit status: 0 no difference, 1 a difference (check, ab) or a failed session (load),
 * 2 bad usage or an unreadable fixture. */
int rp_cli_main(int argc, char **argv);

#endif
