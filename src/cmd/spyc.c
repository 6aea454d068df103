/* SPDX-License-Identifier: MIT */
/* spyc's entry point: the table of commands and top-level usage. */
#include <stdio.h>
#include <string.h>

#include "cmd/commands.h"

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} commands[] = {
    {"record", cmd_record, "sample a process and write a profile"},
    {"dump", cmd_dump, "print every thread's current Python stack"},
    {"top", cmd_top, "show a live table of the functions running"},
    {"report", cmd_report, "print the top functions and lines of a profile"},
    {"diff", cmd_diff, "show what changed from one profile to another"},
    {"merge", cmd_merge, "merge per-rank profiles; report load imbalance"},
};

static void usage(FILE *fp)
{
	size_t i;

	fprintf(fp, "usage: spyc <command> [options]\n\ncommands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(fp, "  %-8s %s\n", commands[i].name, commands[i].help);
	fprintf(fp, "\n'spyc <command> --help' describes each command.\n"
		    "exit codes: 0 ok, 1 ran but some data was lost, "
		    "2 failed, 64 usage error;\n"
		    "record -- PROGRAM: the program's own exit status once "
		    "the profile is written\n");
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("spyc %s\n", SPYC_VERSION);
		return 0;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "spyc: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
