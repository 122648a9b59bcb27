/*
 * cli_config.c - `llmsim config show|list|help`: print a resolved config,
 * the presets of each kind, or the keys of a kind.
 *
 * show takes a file or a preset name. The kind comes from --kind, else
 * from where the file is (configs/gpus -> gpu, workloads/models -> model,
 * ..., any kind's preset folder), else .json means a model (a Hugging
 * Face config.json) and anything else a job. A bare preset name is a job
 * preset if there is one, else the one kind that has a preset so named
 * (config_kind_of, config.h).
 *
 * Exit status: 0 printed; 2 bad input or usage; 1 out of memory or the
 * output could not be written.
 */
#include <cJSON.h>
#include <getopt.h>
#include <string.h>

#include "cli.h"
#include "config/config.h"
#include "base/diag.h"
#include "base/arena.h"
#include "config/schema.h"

struct show_opts {
	const char *what;		/* file or preset name */
	const char *kind;		/* --kind, or NULL */
	const char **sets;		/* --set arguments */
	size_t nsets;			/* how many */
	int json;			/* --json */
};

static int parse_show(int argc, char **argv, struct show_opts *o)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'J' },
		{ "kind", required_argument, NULL, 'k' },
		{ "set", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	cli_getopt_reset();
	/* argv[1] is "show": options and the config after it */
	while ((c = cli_getopt(argc - 1, argv + 1, "", longopts, "config"))
	       != -1) {
		switch (c) {
		case 'J': o->json = 1; break;
		case 'k': o->kind = optarg; break;
		case 's': o->sets[o->nsets++] = optarg; break;
		default: return CLI_USAGE;
		}
	}
	if (optind + 1 >= argc)
		return cli_usage_error("config", "%s", "config show needs a "
				       "file, a preset name, or - for standard "
				       "input");
	if (optind + 2 < argc)
		return cli_usage_error("config", "config show takes one config, "
				       "got '%s' and '%s'", argv[optind + 1],
				       argv[optind + 2]);
	o->what = argv[optind + 1];
	return CLI_OK;
}

static int unknown_kind(const char *name)
{
	const char *names[32];
	char list[256];
	size_t n, k = 0;
	const char *near;

	list[0] = '\0';
	for (n = 0; config_kinds[n] && n < 32; n++) {
		names[n] = config_kinds[n]->kind;
		k += (size_t)snprintf(list + k, k < sizeof(list) ?
				      sizeof(list) - k : 0, "%s%s",
				      n ? ", " : "", names[n]);
	}
	near = schema_closest(name, names, n);
	if (near)
		return cli_usage_error("config", "unknown kind '%s', did you "
				       "mean '%s'? (kinds: %s)", name, near,
				       list);
	return cli_usage_error("config", "unknown kind '%s' (kinds: %s)", name,
			       list);
}

static int print_config(const struct schema *s, const void *obj, int json,
			struct diag *d)
{
	cJSON *j;
	char *text;

	if (!json) {
		schema_print_yaml(stdout, s, obj, 0);
		return CLI_OK;	/* cli_main checks stdout */
	}
	j = schema_to_json_units(s, obj);
	text = j ? cJSON_Print(j) : NULL;
	cJSON_Delete(j);
	if (!text) {
		diag_oom(d);
		return CLI_FAIL;
	}
	puts(text);
	cJSON_free(text);
	return CLI_OK;	/* cli_main checks stdout */
}

static int show(struct config_ctx *cx, const struct show_opts *o)
{
	const struct schema *s;
	const char *several = NULL;
	void *obj;

	if (o->kind) {
		s = config_kind(o->kind);
		if (!s)
			return unknown_kind(o->kind);
	} else {
		s = config_kind_of(cx, o->what, &several);
		if (!s && several)
			return cli_usage_error("config", "'%s' is a preset of "
					       "several kinds (%s); say which "
					       "with --kind", o->what, several);
		if (!s)
			return CLI_FAIL;
	}
	obj = arena_alloc(cx->arena, s->size);
	if (!obj) {
		diag_oom(cx->diag);
		return CLI_FAIL;
	}
	if (config_load(cx, s, o->what, o->sets, o->nsets, obj) != 0)
		return cx->diag->oom ? CLI_FAIL : CLI_USAGE;
	return print_config(s, obj, o->json, cx->diag);
}

static int list(struct config_ctx *cx, int argc, char **argv)
{
	const struct schema *one = NULL;
	const char **names;
	size_t i, k;

	if (argc > 3)
		return cli_usage_error("config", "%s", "config list takes at "
				       "most one kind");
	if (argc == 3 && !(one = config_kind(argv[2])))
		return unknown_kind(argv[2]);
	for (i = 0; config_kinds[i]; i++) {
		const struct schema *s = config_kinds[i];

		if (one && s != one)
			continue;
		names = config_list_presets(cx, s);
		if (!names) {
			diag_oom(cx->diag);
			return CLI_FAIL;
		}
		if (!one)
			printf("%s%s:\n", i ? "\n" : "", s->kind);
		for (k = 0; names[k]; k++)
			printf("%s%s\n", one ? "" : "  ", names[k]);
	}
	return CLI_OK;	/* cli_main checks stdout */
}

static int help(int argc, char **argv)
{
	const struct schema *s;
	size_t i;

	if (argc > 3)
		return cli_usage_error("config", "%s", "config help takes at "
				       "most one kind");
	if (argc == 3) {
		if (!(s = config_kind(argv[2])))
			return unknown_kind(argv[2]);
		schema_print_help(stdout, s);
		return CLI_OK;	/* cli_main checks stdout */
	}
	puts("config kinds:");
	for (i = 0; config_kinds[i]; i++)
		printf("  %-8s %s\n", config_kinds[i]->kind,
		       config_kinds[i]->help);
	puts("\nrun 'llmsim config help KIND' for the keys of one kind");
	return CLI_OK;	/* cli_main checks stdout */
}

static int dispatch(struct config_ctx *cx, int argc, char **argv)
{
	struct show_opts o;
	int rc;

	if (strcmp(argv[1], "list") == 0)
		return list(cx, argc, argv);
	if (strcmp(argv[1], "help") == 0)
		return help(argc, argv);
	if (strcmp(argv[1], "import-megatron") == 0)
		return cli_import_megatron(cx, argc - 1, argv + 1);
	if (strcmp(argv[1], "show") != 0)
		return cli_usage_error("config", "unknown config command '%s' "
				       "(show, list, help, import-megatron)", argv[1]);
	memset(&o, 0, sizeof(o));
	o.sets = arena_alloc(cx->arena, (size_t)argc * sizeof(*o.sets));
	if (!o.sets) {
		diag_oom(cx->diag);
		return CLI_FAIL;
	}
	rc = parse_show(argc, argv, &o);
	return rc != CLI_OK ? rc : show(cx, &o);
}

int cli_config(int argc, char **argv, const char *argv0)
{
	struct arena a;
	struct diag d;
	struct config_ctx cx;
	int rc;

	if (argc < 2)
		return cli_usage_error("config", "%s", "config needs a "
				       "command: show, list or help");
	arena_init(&a);
	diag_init(&d, stderr);
	cx.arena = &a;
	cx.diag = &d;
	cx.data_root = config_data_root(&a, argv0);
	if (cx.data_root) {
		rc = dispatch(&cx, argc, argv);
	} else {
		diag_oom(&d);
		rc = CLI_FAIL;
	}
	arena_release(&a);
	return rc;
}
