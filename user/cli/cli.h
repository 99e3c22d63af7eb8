/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cli.h - what the vcpustat subcommands share: error output (plain text, or a
 * JSON error object in JSON mode, like bpftool's p_err) and the command table.
 * Each subcommand lives in user/cli/cmd_<name>.c: it declares its options
 * (struct cli_command, parsed by options.c, with a -h/--help that teaches),
 * calls the library and prints.
 */
#ifndef VCPUSTAT_CLI_H
#define VCPUSTAT_CLI_H

#include <getopt.h>
#include <signal.h>
#include <sys/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "live/live.h"
#include "model/summary.h"
#include "export/export.h"

extern bool cli_json;   /* errors as {"error": "..."} on stdout */
extern bool cli_pretty; /* -p/--pretty: every JSON document indented */

/*
 * How a command takes JSON: its field in the command table (vcpustat.c).
 * The global -j sets cli_json_given to it, and the option layer then parses
 * that option (--json, or -f json) before the command's argv, as if it had
 * been given first: an option of argv still overrides it (-f csv), and the
 * command reads its JSON choice where it always did, argv left as it was.
 */
enum cli_json_form {
	CLI_JSON_NONE,	 /* no document of its own: -j only makes errors JSON */
	CLI_JSON_FLAG,	 /* its "json" option (--json) */
	CLI_JSON_FORMAT, /* its "format" option with the value json (-f json) */
};
extern enum cli_json_form cli_json_given;

/*
 * The one way JSON reaches stdout: doc (its reference is taken), a newline,
 * a flush. CLI_JSON_LINE: compact, one document per line (streams: top,
 * report, errors); CLI_JSON_DOC: indented, keys in insertion order (one-shot
 * documents: check, query, import, sync). --pretty indents both. 0, -ENOMEM
 * (doc is NULL) or -EIO.
 */
enum cli_json_style { CLI_JSON_LINE, CLI_JSON_DOC };
int cli_json_print(json_t *doc, enum cli_json_style style);
/* The same for a document written by util/jsonw.h (compact, whatever --pretty says). */
struct jw;
int cli_json_print_text(struct jw *w);
extern const char *cli_prog; /* "vcpustat" */

/* Print one clear error (what failed, where, what to do) to stderr, or as JSON. */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* cli_err(), then CLI_USAGE: `return cli_usage_error("--x %s: ...", arg);` */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Exit codes, one policy in every command (docs/vcpustat.md, "Exit codes"):
 * CLI_FAIL when doing it failed (a file, the kernel), CLI_USAGE when what was
 * asked is wrong (an option, a value, a time, a selection that matches
 * nothing), CLI_NOPERM for missing privileges.
 */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2, CLI_NOPERM = 77 };
/* The last paragraph of every command's --help: that policy. */
void cli_usage_exit_status(FILE *out);

/*
 * ---- options.c: the option layer ----
 * A command declares its options once; the parser, -h/--help and the error
 * for an unknown option or a missing value come from that declaration.
 */
enum cli_type {
	CLI_CUSTOM,   /* cli_next() returns its key, the command parses a->arg */
	CLI_FLAG,     /* bool *dest = true */
	CLI_STRING,   /* const char **dest = the value */
	CLI_DURATION, /* __u64 *dest: ns, min to max (0: no maximum), cli_parse_duration() */
	CLI_SECONDS,  /* double *dest: seconds, min to max ns, cli_parse_duration() */
	CLI_NUMBER,   /* long *dest: min to max, cli_parse_long() with what */
	CLI_SIZE,     /* long long *dest: bytes, min to max (0: none), cli_parse_size() */
};

struct cli_option {
	const char *name; /* the long name, without "--" */
	int key;	  /* its short letter, or a code from 256 for a long-only option */
	const char *arg;  /* the value's name in --help ("FILE"); NULL: a flag */
	const char *help; /* its --help text; each '\n' starts a line under the first (NULL: not shown) */
	enum cli_type type;
	void *dest;		/* where a typed option's value goes */
	long long min, max;	/* its bounds */
	const char *what;	/* CLI_NUMBER: what it counts ("files") */
};

struct cli_command {
	const char *name;		  /* "record" */
	const char *synopsis;		  /* after "usage: vcpustat NAME "; '\n' continues it */
	const char *about;		  /* what the command does, before the options (or NULL) */
	const struct cli_option *options; /* ends with { NULL }; -h/--help is implied */
	const char *notes;		  /* after the options (or NULL) */
};

#define CLI_MAX_OPTIONS 40

struct cli_args {
	const struct cli_command *cmd;
	int argc;
	char **argv;
	char *arg; /* the value of the option cli_next() returned */
	int pos;   /* after the options: argv[pos..argc-1] are the operands */
	enum cli_json_form json; /* the global -j's option, still to parse (cli_json_given) */
	struct option longopts[CLI_MAX_OPTIONS + 3]; /* and --help, --pretty, the end */
	char shortopts[2 * CLI_MAX_OPTIONS + 4];
};

enum { CLI_HELPED = -1, CLI_BADOPT = -2 };

void cli_args_init(struct cli_args *a, const struct cli_command *cmd, int argc, char **argv);
/*
 * The next CLI_CUSTOM option's key (a->arg its value), the typed ones stored
 * on the way; 0 after the last (a->pos: the first operand); CLI_HELPED after
 * printing --help to stdout; CLI_BADOPT after an error (and, for an unknown
 * option, the usage on stderr). cli_args_exit(): the exit code
 * for those two.
 */
int cli_next(struct cli_args *a);
static inline int cli_args_exit(int c)
{
	return c == CLI_HELPED ? CLI_OK : CLI_USAGE;
}
/*
 * For a command whose options are all typed: cli_args_init, then cli_next to
 * the end. 0 (a->pos: the first operand), or CLI_HELPED/CLI_BADOPT as
 * cli_next returns them.
 */
int cli_parse(struct cli_args *a, const struct cli_command *cmd, int argc, char **argv);
/*
 * An option whose value is optional (its arg in the table is "[NAME]"): the
 * value given as --opt=VALUE, else the next argument if accept() takes it
 * (then consumed), else NULL. Call right after cli_next() returned it.
 */
const char *cli_optional_value(struct cli_args *a, bool (*accept)(const char *));
/* An accept() for a CPU list (0-3,8): report's --pcpu LIST, where --pcpu alone is a view of its own. */
bool cli_cpu_list(const char *s);
/* Operands where the command takes none: the error, CLI_USAGE; else 0. */
int cli_no_more_args(const struct cli_args *a);
/* The command's --help. */
void cli_usage(const struct cli_command *cmd, FILE *f);

/*
 * Subcommands: int cmd_<name>(int argc, char **argv), argv[1..] its options
 * and operands; argv[0] its name, or with no command the argument before
 * (getopt does not read it).
 */
int cmd_top(int argc, char **argv);
int cmd_sync(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_import(int argc, char **argv);

/*
 * A live command's health at its end (model/health.c): if problems, a
 * warning naming what `what` misses (h's sentence) and true.
 */
bool cli_blind(unsigned int problems, const struct health *h, const char *what);

/*
 * Check privileges, load and attach the BPF programs, seed the vCPUs of
 * running VMs, and warn about programs that could not attach. On failure,
 * prints one clear error and returns the exit code to use (CLI_NOPERM,
 * CLI_FAIL); 0 on success.
 */
int cli_open_live(struct vcpustat **vs, const struct vcpustat_options *opts, bool verbose, bool quiet);

/* Set by SIGINT/SIGTERM (and SIGPIPE with pipe_too) once cli_catch_stop() ran. */
extern volatile sig_atomic_t cli_stop;
void cli_catch_stop(bool pipe_too);

/*
 * Parse a whole number option: fills *out, or prints
 * "OPT ARG: a number of WHAT, MIN to MAX" and returns CLI_USAGE.
 */
int cli_parse_long(const char *opt, const char *arg, long min, long max, const char *what, long *out);

/*
 * Every duration option: parse_duration_ns() syntax ("1.5s", "250ms", "15m",
 * "2h", bare seconds), from min_ns to max_ns (0: no maximum). Fills *ns, or
 * prints "OPT ARG: a duration from MIN to MAX ..." and returns CLI_USAGE.
 * cli_parse_seconds(): the same, in seconds.
 */
int cli_parse_duration(const char *opt, const char *arg, __u64 min_ns, __u64 max_ns, __u64 *ns);
int cli_parse_seconds(const char *opt, const char *arg, double min_s, double max_s, double *secs);

/* --vm NAME|PID: add arg to the filter (at most max); prints the error and returns CLI_USAGE when full. */
int cli_add_vm(struct summary_filter *f, const char **names, size_t max, const char *arg);
/*
 * ---- the filters of the offline commands (--vcpu, --tid, --pcpu) ----
 * One declaration and one parser for every command that reads recordings
 * (report, top --file, query, plot, export): CLI_FILTER_OPTIONS in its
 * option table, cli_filter_option() in its loop.
 */
enum { CLI_OPT_VCPU = 0x300, CLI_OPT_TID, CLI_OPT_PCPU, CLI_OPT_CGROUP };
/* --cgroup: live and offline alike (the VM's VMM process's cgroup). */
#define CLI_FILTER_CGROUP                                                                                  \
	{ "cgroup", CLI_OPT_CGROUP, "PATTERN", "only VMs whose VMM runs in a matching cgroup: a glob of its path,\n" \
					       "or a container id (or its start), pod uid or libvirt domain\n"        \
					       "that the path names (repeatable)" }
#define CLI_FILTER_VCPU_TID                                                                                 \
	{ "vcpu", CLI_OPT_VCPU, "LIST", "only these vCPU indexes of each VM (repeatable; 0,2-3)" },          \
	{ "tid", CLI_OPT_TID, "TID", "only the vCPUs (and host threads) with this thread id (repeatable)" }
#define CLI_FILTER_OPTIONS                                                                                 \
	CLI_FILTER_VCPU_TID, { "pcpu", CLI_OPT_PCPU, "LIST", "only time on these physical CPUs (0-3,8; repeatable)" }, \
	CLI_FILTER_CGROUP
/*
 * key is one of those options: a->arg (or arg, if not NULL) into f; 0, or
 * CLI_USAGE after the error naming the command, option and value. 1: key is
 * no filter option.
 */
int cli_filter_option(const struct cli_args *a, int key, const char *arg, struct summary_filter *f);
/*
 * Each filter of f selects something in file (summary_filter_check), --cgroup
 * first made the --vm list of the VMs of file in those cgroups
 * (summary_filter_cgroups_to_vms: f->vms then point into this file's
 * storage until the next call): 0, or CLI_USAGE after "CMD: --vcpu 7: no
 * such vCPU in FILE (...)"; CLI_FAIL.
 */
int cli_filter_check(const char *cmd, const char *file, struct sht_reader *r, struct summary_filter *f);
/* The filters together kept nothing (nr: what the command kept): CLI_USAGE after the error; else 0. */
int cli_filter_none_kept(const char *cmd, const char *file, const struct summary_filter *f, size_t nr);

/*
 * After a report of file with filter f kept nr_vms VMs: if --vm was given
 * and none matched, print an error naming the VMs of the file and return
 * CLI_USAGE; else 0.
 */
int cli_vm_none_matched(const char *file, struct sht_reader *r, const struct summary_filter *f, size_t nr_vms);

/*
 * Open a recording and resolve the window [from, to] (NULL: its start/end;
 * an unfinished file ends at its horizon). Prints one error and returns its
 * exit code (CLI_FAIL, CLI_USAGE), or 0 with *r open (sht_close it).
 */
int cli_open_window(const char *file, const char *from, const char *to, struct sht_reader **r, uint64_t *t1,
		    uint64_t *t2);

/*
 * --meta KEY=VALUE: split arg (modified in place) into *key and *value. KEY is
 * letters, digits, '_', '-', '.'; not one of reserved (NULL-terminated: the
 * keys the command writes itself). Prints the error and returns CLI_USAGE.
 */
int cli_parse_meta(char *arg, const char *const *reserved, const char **key, const char **value);

/* --meta KEY=VALUE into m (at most max): 0, or CLI_USAGE after the error. */
struct record_meta;
int cli_add_meta(struct record_meta *m, char *arg, const char *const *reserved, size_t max);

/*
 * A size option ("64M", "4K", "1G", bytes; a B may follow): fills *size, or
 * prints "OPT ARG: a size ..." and returns CLI_USAGE. max 0: no maximum.
 */
int cli_parse_size(const char *opt, const char *arg, long long min, long long max, long long *size);

/* ns as seconds with nine decimals: "12.000345678". */
void cli_fmt_secs(uint64_t ns, char *buf, size_t len);

/*
 * What `vcpustat top` (cmd_top.c) hands to its time-travel mode
 * (top_file.c): the live view's options, and the recording to play.
 */
struct top_args {
	double delay;	 /* -d: the window, seconds */
	long iterations; /* -n: windows to show in -b/-j (-1: all) */
	long top;	 /* --top: rows per table in -b */
	bool batch, json;
	bool address_spaces; /* --address-spaces: the guest's CR3 at each exit (live only) */
	struct summary_filter *filter;
	const char *file;	 /* the recording */
	const char *from;	 /* --from T (NULL: its start) */
	double speed;		 /* --speed X: play at X times the recorded pace (0: -b/-j as fast as they print, UI 1x) */
	const char *demo_reason; /* the demo plays its bundled recording because of this (NULL: not the demo) */
};

/* `vcpustat top --file` (top_file.c): the live view over a recording. Returns the exit code. */
int top_file(const struct top_args *a);
/* `vcpustat top` (top_live.c): the live view of this host, with the demo's VMs if asked. */
int top_live(const struct top_args *a, bool demo, bool verbose);

/* What `vcpustat export` (cmd_export.c) hands to its runs (export_run.c): its options, checked. */
struct export_args {
	struct export_window w; /* what to write, and where (w.out) */
	struct summary_filter filter;
	const char *file, *from, *to;
	double interval, every;
	bool verbose;
	bool address_spaces; /* live: load the guest-CR3 program */
};

/* `vcpustat export --file`: the window of the recording x->file (export_window). Returns the exit code. */
int export_file(struct export_args *x);
/* `vcpustat export`: the live maps, once or --every SEC (metrics_live_export). Returns the exit code. */
int export_live(const struct export_args *x);

/*
 * `vcpustat report --flow THREAD` (report_flow.c): the execution flow of one
 * thread (model/flow.c), its options checked first: filter must not narrow,
 * other_view (--placement or --pcpu) and top (--top) must not be given.
 * Returns the exit code.
 */
int report_flow(const char *file, const char *thread, const char *min_arg, const char *from, const char *to, bool json,
		const struct summary_filter *filter, bool other_view, bool top);

/* ---- demo.c: `vcpustat --demo` ---- */
struct demo {
	pid_t vmm, hog;
};
/*
 * Why the live demo cannot run here (NULL: it can): VCPUSTAT_DEMO_NO_KVM is
 * set (to try the fallback on a host with KVM), /dev/kvm cannot be opened,
 * microvm is missing, or BPF is not allowed. buf holds the sentence.
 */
const char *demo_unusable(char *buf, size_t len);
/* The bundled recording into buf (PATH_MAX): 0, or -1 after the error (naming reason). */
int demo_file(char *buf, size_t len, const char *reason);
/* Start the demo's VMs and CPU hog (0), or print why not (-1); demo_stop() ends them. */
int demo_start(struct demo *d);
void demo_stop(struct demo *d);

#endif
