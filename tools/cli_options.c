/* cli_options.c — the loader's option registry (ferry_loader_option*) as
 * `ferry load` flags: getopt's table, the help lines, and setting an option
 * from a flag, with the library's message when the value is refused. */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

struct option *cli_loader_longopts(const struct option *extra) {
  int nextra = 0, n = ferry_loader_option_count();
  while (extra[nextra].name)
    nextra++;
  struct option *all = calloc((size_t)(nextra + n + 1), sizeof *all);
  if (!all)
    return NULL;
  memcpy(all, extra, (size_t)nextra * sizeof *all);
  int k = nextra;
  for (int i = 0; i < n; i++) {
    const ferry_option *opt = ferry_loader_option(i);
    if (!opt->flag)
      continue;
    int has_arg = opt->type == FERRY_OPTION_BOOL ? no_argument
                  : opt->flag_value              ? optional_argument
                                                 : required_argument;
    all[k++] = (struct option){opt->flag + 2, has_arg, 0, CLI_OPT_BASE + i};
  }
  return all;
}

int cli_loader_set(const char *cmd, ferry_loader_options *o, const char *name, const char *arg) {
  if (ferry_loader_options_set(o, name, arg) == FERRY_OK)
    return 0;
  cli_usage_error(cmd, "%s", ferry_last_error());
  return -1;
}

const char *cli_loader_next_value(const ferry_loader_options *o, int val, int argc, char **argv) {
  const ferry_option *opt = ferry_loader_option(val - CLI_OPT_BASE);
  if (!opt || !opt->flag || !opt->flag_value || opt->type == FERRY_OPTION_BOOL || optind >= argc)
    return NULL;
  const char *word = argv[optind];
  ferry_loader_options scratch = *o;
  char *end;
  /* a number for a number (out of range too: the option then says so), or
   * a value the option takes; anything else is an operand (`--flip DIR`) */
  int number = 0;
  if (*word && (opt->type == FERRY_OPTION_FLOAT || opt->type == FERRY_OPTION_INT ||
                opt->type == FERRY_OPTION_U64)) {
    (void)strtod(word, &end);
    number = !*end;
  }
  if (!number && ferry_loader_options_set(&scratch, opt->flag, word) != FERRY_OK)
    return NULL;
  optind++;
  return word;
}

int cli_loader_flag(const char *cmd, ferry_loader_options *o, int val, const char *arg) {
  const ferry_option *opt = ferry_loader_option(val - CLI_OPT_BASE);
  if (!opt || !opt->flag)
    return cli_usage_error(cmd, "unknown option"), -1;
  return cli_loader_set(cmd, o, opt->flag, arg);
}

/* "--batch N", "--crop none|center|random", "--flip [X]" */
static void flag_text(const ferry_option *opt, char *out, size_t size) {
  char arg[96] = "";
  switch (opt->type) {
  case FERRY_OPTION_BOOL: break;
  case FERRY_OPTION_CHOICE:
    for (int k = 0; opt->choices[k]; k++) {
      size_t n = strlen(arg);
      snprintf(arg + n, sizeof arg - n, "%s%s", k ? "|" : " ", opt->choices[k]);
    }
    break;
  case FERRY_OPTION_DEVICE: snprintf(arg, sizeof arg, " cpu|cuda:N"); break;
  case FERRY_OPTION_FLOAT:
    snprintf(arg, sizeof arg, "%s",
             opt->count == 3   ? " R,G,B"
             : opt->count == 2 ? " MIN,MAX"
                               : " X");
    break;
  default: snprintf(arg, sizeof arg, " %s", opt->flags & FERRY_OPTION_MIB ? "MiB" : "N"); break;
  }
  if (opt->flag_value && opt->type != FERRY_OPTION_BOOL)
    snprintf(out, size, "%s [%s]", opt->flag, arg + 1); /* --flip X and --flip=X */
  else
    snprintf(out, size, "%s%s", opt->flag, arg);
}

/* Writes `text` from column 24, wrapped before column 80. */
static void wrapped(FILE *out, const char *text) {
  const char *p = text;
  while (*p) {
    size_t n = strlen(p);
    if (n > 56) {
      n = 56;
      while (n > 0 && p[n] != ' ')
        n--;
      if (n == 0)
        n = strcspn(p, " ");
    }
    fprintf(out, "%.*s\n", (int)n, p);
    p += n;
    while (*p == ' ')
      p++;
    if (*p)
      fprintf(out, "%24s", "");
  }
}

void cli_loader_help(FILE *out) {
  for (int i = 0; i < ferry_loader_option_count(); i++) {
    const ferry_option *opt = ferry_loader_option(i);
    if (!opt->flag)
      continue;
    char flag[128], line[512];
    flag_text(opt, flag, sizeof flag);
    /* the default, unless the help names it or the flag is a switch; a
     * switch that turns the option off says what off is first */
    const char *off = strstr(opt->help, "; off: ");
    if (opt->type == FERRY_OPTION_BOOL && off && strcmp(opt->default_value, "0"))
      snprintf(line, sizeof line, "%s (default: %.*s)", off + 7, (int)(off - opt->help), opt->help);
    else if (opt->type == FERRY_OPTION_BOOL || strstr(opt->help, "default"))
      snprintf(line, sizeof line, "%s", opt->help);
    else if (opt->flags & FERRY_OPTION_MIB)
      snprintf(line, sizeof line, "%s (default %llu)", opt->help,
               strtoull(opt->default_value, NULL, 10) >> 20);
    else
      snprintf(line, sizeof line, "%s (default %s)", opt->help, opt->default_value);
    if (strlen(flag) <= 21)
      fprintf(out, "  %-21s ", flag);
    else
      fprintf(out, "  %s\n%24s", flag, "");
    wrapped(out, line);
  }
}
