// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * options.c - the one option layer of the subcommands: a command declares its
 * options once (struct cli_command: names, arguments, help), and this file
 * derives getopt_long's tables, parses argv, and prints the --help.
 */
#include <ctype.h>
#include <getopt.h>
#include <string.h>
#include "cli/cli.h"

/* The column where option help starts, and where its continuation lines are. */
#define HELP_COLUMN 24
/* The global --pretty, which every command takes after its name too: a key no command's option has. */
#define KEY_PRETTY 0x10000

static void print_indented(FILE *f, const char *text, int indent)
{
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);

		fprintf(f, "%*s%.*s\n", p == text ? 0 : indent, "", len, p);
		p = nl ? nl + 1 : p + len;
	}
}

void cli_usage(const struct cli_command *cmd, FILE *f)
{
	fprintf(f, "usage: %s %s ", cli_prog, cmd->name);
	print_indented(f, cmd->synopsis, 0);
	if (cmd->about)
		fprintf(f, "\n%s", cmd->about);
	if (cmd->options[0].name)
		fputc('\n', f);
	for (const struct cli_option *o = cmd->options; o->name; o++) {
		char left[96];
		int n;

		if (!o->help) /* an alias kept for old command lines: not shown */
			continue;
		if (o->key > 0 && o->key < 128)
			n = snprintf(left, sizeof(left), "  -%c, --%s%s%s", o->key, o->name, o->arg ? " " : "",
				     o->arg ?: "");
		else
			n = snprintf(left, sizeof(left), "      --%s%s%s", o->name, o->arg ? " " : "", o->arg ?: "");
		fprintf(f, "%s%*s", left, n < HELP_COLUMN - 1 ? HELP_COLUMN - n : 2, "");
		print_indented(f, o->help, HELP_COLUMN);
	}
	if (cmd->notes)
		fprintf(f, "\n%s", cmd->notes);
	cli_usage_exit_status(f);
}

static const struct cli_option *option_of(const struct cli_command *cmd, int key)
{
	for (const struct cli_option *o = cmd->options; o->name; o++)
		if (o->key == key)
			return o;
	return NULL;
}

void cli_args_init(struct cli_args *a, const struct cli_command *cmd, int argc, char **argv)
{
	size_t n = 0, s = 0;

	memset(a, 0, sizeof(*a));
	a->cmd = cmd;
	a->argc = argc;
	a->argv = argv;
	a->shortopts[s++] = ':'; /* a missing argument is reported as such */
	for (const struct cli_option *o = cmd->options; o->name && n < CLI_MAX_OPTIONS; o++, n++) {
		a->longopts[n] = (struct option){ o->name,
						  !o->arg ? no_argument : o->arg[0] == '[' ? optional_argument : required_argument,
						  NULL, o->key };
		if (o->key > 0 && o->key < 128 && s + 3 < sizeof(a->shortopts)) {
			a->shortopts[s++] = (char)o->key;
			if (o->arg)
				a->shortopts[s++] = ':';
			if (o->arg && o->arg[0] == '[')
				a->shortopts[s++] = ':';
		}
	}
	if (!option_of(cmd, 'h')) { /* -h/--help: listed in --help by the commands that say so */
		a->longopts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
		a->shortopts[s++] = 'h';
	}
	a->longopts[n] = (struct option){ "pretty", no_argument, NULL, KEY_PRETTY }; /* then a zero: the end */
	a->shortopts[s] = '\0';
	a->json = cli_json_given;
	optind = 1;
	opterr = 0; /* our messages, naming the command */
}

/*
 * A typed option's value into its destination: 0, or CLI_USAGE after the
 * error, which names the option as it was given ("-d", "--delay").
 */
static int store(const struct cli_args *a, const struct cli_option *o, char *arg)
{
	const char *given = optind >= 2 && arg == a->argv[optind - 1] ? a->argv[optind - 2] : a->argv[optind - 1];
	char opt[64];

	if (given[0] == '-' && given[1] != '-' && o->key > 0 && o->key < 128)
		snprintf(opt, sizeof(opt), "-%c", o->key);
	else
		snprintf(opt, sizeof(opt), "--%s", o->name);
	switch (o->type) {
	case CLI_FLAG: *(bool *)o->dest = true; return 0;
	case CLI_STRING: *(const char **)o->dest = arg; return 0;
	case CLI_DURATION: return cli_parse_duration(opt, arg, (__u64)o->min, (__u64)o->max, o->dest);
	case CLI_SECONDS: return cli_parse_seconds(opt, arg, (double)o->min / 1e9, (double)o->max / 1e9, o->dest);
	case CLI_NUMBER: return cli_parse_long(opt, arg, (long)o->min, (long)o->max, o->what, o->dest);
	case CLI_SIZE: return cli_parse_size(opt, arg, o->min, o->max, o->dest);
	case CLI_CUSTOM: break;
	}
	return 0;
}

/*
 * The global -j's option, the first of the command's: the command's "json"
 * flag, or its "format" option with the value json. A command whose table
 * entry says so but declares no such option is a bug of the table: an error,
 * as its own parser would give for an unknown option.
 */
static int implied_json(struct cli_args *a)
{
	static char value[] = "json"; /* a->arg is argv's type */
	const char *name = a->json == CLI_JSON_FORMAT ? "format" : "json";
	const struct cli_option *o;

	a->json = CLI_JSON_NONE;
	for (o = a->cmd->options; o->name; o++)
		if (!strcmp(o->name, name))
			break;
	if (!o->name) {
		cli_err("%s: -j: no --%s option to give it (the command table's json field is wrong)", a->cmd->name,
			name);
		return CLI_BADOPT;
	}
	a->arg = o->arg ? value : NULL;
	if (o->type == CLI_CUSTOM)
		return o->key;
	if (o->type != CLI_FLAG) { /* a JSON option is a flag, or a format the command parses */
		cli_err("%s: -j: --%s is not an option -j can give", a->cmd->name, name);
		return CLI_BADOPT;
	}
	*(bool *)o->dest = true;
	return 0;
}

int cli_next(struct cli_args *a)
{
	const struct cli_option *o;
	int c;

	if (a->json) {
		c = implied_json(a);
		if (c)
			return c;
	}
again:
	c = getopt_long(a->argc, a->argv, a->shortopts, a->longopts, NULL);
	a->arg = optarg;
	switch (c) {
	case -1:
		a->pos = optind;
		return 0;
	case 'h':
		cli_usage(a->cmd, stdout);
		return CLI_HELPED;
	case KEY_PRETTY: /* vcpustat.c's global option, after the command: `vcpustat report --json day.sht --pretty` */
		cli_pretty = true;
		goto again;
	case ':':
	case '?': {
		const char *bad = a->argv[optind - 1];

		if (c == ':') {
			cli_err("%s %s: the option needs a value (see --help)", a->cmd->name, bad);
			return CLI_BADOPT;
		}
		if (optopt && !(bad[0] == '-' && bad[1] == '-'))
			cli_err("%s: unknown option -%c (see --help)", a->cmd->name, optopt);
		else
			cli_err("%s: unknown option %s (see --help)", a->cmd->name, bad);
		cli_usage(a->cmd, stderr);
		return CLI_BADOPT;
	}
	default:
		o = option_of(a->cmd, c);
		if (!o || o->type == CLI_CUSTOM)
			return c;
		if (store(a, o, optarg))
			return CLI_BADOPT;
		goto again;
	}
}

int cli_no_more_args(const struct cli_args *a)
{
	if (a->pos < a->argc) {
		cli_err("unexpected argument '%s' (see --help)", a->argv[a->pos]);
		return CLI_USAGE;
	}
	return 0;
}

int cli_parse(struct cli_args *a, const struct cli_command *cmd, int argc, char **argv)
{
	int c;

	cli_args_init(a, cmd, argc, argv);
	while ((c = cli_next(a)) > 0)
		;
	return c;
}

const char *cli_optional_value(struct cli_args *a, bool (*accept)(const char *))
{
	if (a->arg)
		return a->arg;
	if (optind < a->argc && accept(a->argv[optind]))
		a->arg = a->argv[optind++];
	return a->arg;
}

bool cli_cpu_list(const char *s)
{
	if (*s < '0' || *s > '9')
		return false;
	for (; *s; s++)
		if ((*s < '0' || *s > '9') && *s != ',' && *s != '-')
			return false;
	return true;
}
