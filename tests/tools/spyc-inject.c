/* SPDX-License-Identifier: MIT */
/*
 * The live tests' driver of src/sys/inject.c and src/gpu/gpu.c: load a library
 * (or spyc's GPU agent) into a running process, as `spyc record --gpu
 * --pid` will.  Not installed, not part of spyc's command line.
 *
 *   spyc-inject --pid PID [--any] [--call FUNCTION [ARG]] LIBRARY
 *   spyc-inject --pid PID --agent [AGENT]
 *   spyc-inject --pid PID --remote-exec SCRIPT [--timeout MS]
 *
 * --any skips the check that PID is a Python process.  --agent loads the
 * agent (default: the one spyc finds) as record --gpu --pid does (PEP
 * 768 from 3.14, else ptrace), and prints the status it reports through
 * the channel, "agent: STATUS: MESSAGE", then "loaded through: PEP 768"
 * or "loaded through: ptrace" (and ", not PEP 768: WHY" when there is a
 * why).  --remote-exec asks PID's main thread to run the Python file
 * SCRIPT through PEP 768 (src/py/remoteexec.c) and waits up to MS (default
 * 2000) for it to take it: "remote-exec: taken".  Exit codes as spyc's:
 * 0 ok, 2 failed (one line on stderr), 64 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/commands.h"
#include "gpu/gpu.h"
#include "sys/inject.h"
#include "py/pyruntime.h"
#include "py/remoteexec.h"
#include "util.h"

static int usage(void)
{
	fprintf(stderr,
		"usage: spyc-inject --pid PID [--any] [--call FUNCTION [ARG]] "
		"LIBRARY\n"
		"       spyc-inject --pid PID --agent [AGENT]\n"
		"       spyc-inject --pid PID --remote-exec SCRIPT [--timeout "
		"MS]\n");
	return EXIT_USAGE;
}

int main(int argc, char **argv)
{
	const char *call = NULL, *arg = NULL, *library = NULL, *script = NULL;
	struct pyruntime rt;
	struct inject_result res;
	int any = 0, agent = 0, timeout_ms = 2000, i, err;
	pid_t pid = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--pid") && i + 1 < argc)
			pid = (pid_t)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--any"))
			any = 1;
		else if (!strcmp(argv[i], "--agent"))
			agent = 1;
		else if (!strcmp(argv[i], "--remote-exec") && i + 1 < argc)
			script = argv[++i];
		else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
			timeout_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--call") && i + 1 < argc) {
			call = argv[++i];
			if (i + 2 < argc)
				arg = argv[++i];
		} else if (argv[i][0] != '-' && !library)
			library = argv[i];
		else
			return usage();
	}
	if (pid <= 0 || (!library && !agent && !script))
		return usage();
	if (script) {
		char msg[512];

		err = remote_exec_script(pid, script, timeout_ms, msg,
					 sizeof(msg));
		if (err) {
			fprintf(stderr, "spyc: %s\n", msg);
			return EXIT_FAILED;
		}
		printf("remote-exec: taken\n");
		return EXIT_OK;
	}
	if (!any) {
		err = pyruntime_find(&rt, pid);
		if (err != PYRT_OK && err != PYRT_UNSUPPORTED) {
			fprintf(stderr, "spyc: %s\n", rt.message);
			return EXIT_FAILED;
		}
	}
	if (agent) {
		struct gpuchan chan;
		struct gpuchan_state st;
		struct gpu_attach_result how;
		char msg[512];
		char *path = library ? xstrdup(library)
				     : gpu_agent_path(msg, sizeof(msg));

		if (!path) {
			fprintf(stderr, "spyc: %s\n", msg);
			return EXIT_FAILED;
		}
		err = gpu_attach(pid, path, &chan, &st, &how, msg, sizeof(msg));
		free(path);
		if (err) {
			fprintf(stderr, "spyc: %s\n", msg);
			return EXIT_FAILED;
		}
		printf("agent: %s: %s\n", gpu_agent_status_name(st.status),
		       st.message);
		printf("loaded through: %s%s%s\n", gpu_load_way_name(how.way),
		       how.why_not_pep768[0] ? ", not PEP 768: " : "",
		       how.why_not_pep768);
		gpuchan_release(&chan);
		return EXIT_OK;
	}
	err = inject_library(pid, library, call, arg, &res);
	if (err) {
		fprintf(stderr, "spyc: %s\n", res.message);
		return EXIT_FAILED;
	}
	printf("loaded %s into pid %d (thread %ld)\n", library, (int)pid,
	       res.tid);
	if (res.entry_called)
		printf("%s returned %ld\n", call, res.entry_ret);
	return EXIT_OK;
}
