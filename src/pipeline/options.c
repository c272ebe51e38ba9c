/* options.c — what the library does with the option registry
 * (options_table.c): the public accessors, the defaults, options set from
 * text and read back as text, and the checks of ferry_loader_open. Every
 * message about an option's value is made here, from its row. */
#include "pipeline/options.h"

#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Numbers are read and written in the "C" locale (a decimal point, "0.875"),
 * whatever locale the host set (setlocale(LC_ALL, "") in a German locale
 * makes strtod stop at the '.'): each public function runs between these. */
static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static void c_locale_make(void) { c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0); }

static locale_t c_locale_enter(void) {
  pthread_once(&c_locale_once, c_locale_make);
  return c_locale ? uselocale(c_locale) : (locale_t)0;
}

static void c_locale_leave(locale_t old) {
  if (old)
    uselocale(old);
}

int ferry_loader_option_count(void) { return fy_loader_option_table_count; }

const ferry_option *ferry_loader_option(int index) {
  return index >= 0 && index < fy_loader_option_table_count ? &fy_loader_option_table[index] : NULL;
}

const ferry_option *ferry_loader_option_find(const char *name) {
  for (int i = 0; name && i < fy_loader_option_table_count; i++) {
    const ferry_option *opt = &fy_loader_option_table[i];
    if (!strcmp(opt->name, name) || (opt->flag && !strcmp(opt->flag, name)))
      return opt;
  }
  return NULL;
}

/* ------------------------------------------------------------- values */

typedef struct value {
  long long i; /* INT, BOOL, CHOICE, DEVICE */
  uint64_t u;  /* U64 */
  double f[3]; /* FLOAT */
} value;

static void *field(ferry_loader_options *o, const ferry_option *opt) {
  return (char *)o + opt->offset;
}

static void read_value(const ferry_loader_options *o, const ferry_option *opt, value *v) {
  const char *p = (const char *)o + opt->offset;
  memset(v, 0, sizeof *v);
  switch (opt->type) {
  case FERRY_OPTION_U64: memcpy(&v->u, p, sizeof v->u); break;
  case FERRY_OPTION_FLOAT:
    for (int k = 0; k < opt->count; k++) {
      float x;
      memcpy(&x, p + k * sizeof x, sizeof x);
      v->f[k] = x;
    }
    break;
  default: {
    int x;
    memcpy(&x, p, sizeof x);
    v->i = x;
  }
  }
}

static void write_value(ferry_loader_options *o, const ferry_option *opt, const value *v) {
  char *p = field(o, opt);
  switch (opt->type) {
  case FERRY_OPTION_U64: memcpy(p, &v->u, sizeof v->u); break;
  case FERRY_OPTION_FLOAT:
    for (int k = 0; k < opt->count; k++) {
      float x = (float)v->f[k];
      memcpy(p + k * sizeof x, &x, sizeof x);
    }
    break;
  default: {
    int x = (int)v->i;
    memcpy(p, &x, sizeof x);
  }
  }
}

/* Whether one float is in the option's range (-inf..inf: unchecked). */
static int float_ok(const ferry_option *opt, double x) {
  if (opt->min == -INFINITY && opt->max == INFINITY)
    return 1;
  int lo = opt->flags & FERRY_OPTION_MIN_OPEN ? x > opt->min : x >= opt->min;
  int hi = opt->flags & FERRY_OPTION_MAX_OPEN ? x < opt->max : x <= opt->max;
  return lo && hi; /* NaN: neither */
}

static int in_range(const ferry_option *opt, const value *v) {
  switch (opt->type) {
  case FERRY_OPTION_U64:
  case FERRY_OPTION_BOOL: return 1;
  case FERRY_OPTION_FLOAT:
    for (int k = 0; k < opt->count; k++)
      if (!float_ok(opt, v->f[k]))
        return 0;
    return !(opt->flags & FERRY_OPTION_ORDERED) || v->f[0] <= v->f[1];
  default: return v->i >= opt->min && v->i <= opt->max;
  }
}

static int equal(const ferry_option *opt, const value *a, const value *b) {
  if (opt->type == FERRY_OPTION_U64)
    return a->u == b->u;
  if (opt->type != FERRY_OPTION_FLOAT)
    return a->i == b->i;
  for (int k = 0; k < opt->count; k++)
    if ((float)a->f[k] != (float)b->f[k])
      return 0;
  return 1;
}

/* "u8, f16 or f32" */
static void choice_list(const ferry_option *opt, char *out, size_t size) {
  size_t n = 0;
  out[0] = '\0';
  for (int k = 0; opt->choices[k]; k++) {
    const char *sep = k == 0 ? "" : opt->choices[k + 1] ? ", " : " or ";
    n += (size_t)snprintf(out + n, n < size ? size - n : 0, "%s%s", sep, opt->choices[k]);
  }
}

/* What a value of the option must be: "an integer in 1..1048576". */
static void needs(const ferry_option *opt, int mib, char *out, size_t size) {
  char range[96] = "";
  switch (opt->type) {
  case FERRY_OPTION_INT:
    snprintf(out, size, "an integer in %.0f..%.0f", opt->min, opt->max);
    return;
  case FERRY_OPTION_U64:
    snprintf(out, size, mib ? "a number of MiB in 0..%llu" : "an integer in 0..%llu",
             mib ? (unsigned long long)(UINT64_MAX >> 20) : (unsigned long long)UINT64_MAX);
    return;
  case FERRY_OPTION_BOOL: snprintf(out, size, "1 or 0 (or true/false, yes/no, on/off)"); return;
  case FERRY_OPTION_CHOICE:
    choice_list(opt, range, sizeof range);
    snprintf(out, size, "one of %s", range);
    return;
  case FERRY_OPTION_DEVICE:
    snprintf(out, size, "cpu (-1) or cuda:N, N in 0..%.0f", opt->max);
    return;
  case FERRY_OPTION_FLOAT: break;
  }
  int lo_open = opt->flags & FERRY_OPTION_MIN_OPEN, hi_open = opt->flags & FERRY_OPTION_MAX_OPEN;
  if (opt->min == -INFINITY && opt->max == INFINITY)
    range[0] = '\0';
  else if (opt->max == INFINITY)
    snprintf(range, sizeof range, " %s %g%s", lo_open ? ">" : ">=", opt->min,
             hi_open ? " (finite)" : "");
  else if (!lo_open && !hi_open)
    snprintf(range, sizeof range, " in %g..%g", opt->min, opt->max);
  else
    snprintf(range, sizeof range, " %s %g and %s %g", lo_open ? ">" : ">=", opt->min,
             hi_open ? "<" : "<=", opt->max);
  const char *what = opt->count == 1   ? "a number"
                     : opt->count == 2 ? "two numbers MIN,MAX"
                                       : "three numbers R,G,B";
  snprintf(out, size, "%s%s%s", what, range,
           opt->flags & FERRY_OPTION_ORDERED ? ", MIN <= MAX" : "");
}

/* ------------------------------------------------------------- parsing */

static int parse_int(const char *s, long long *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (!*s || *end || errno)
    return 0;
  *out = v;
  return 1;
}

static int parse_u64(const char *s, uint64_t *out) {
  const char *p = s;
  while (*p == ' ' || *p == '\t')
    p++;
  if (*p == '-' || !*p)
    return 0;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(p, &end, 10);
  if (*end || errno)
    return 0;
  *out = v;
  return 1;
}

/* `count` numbers joined by commas, as the floats they are stored as (so
 * that the range is checked on what is stored: 1e39 is inf, 1e-50 is 0). */
static int parse_floats(const char *s, int count, double *out) {
  const char *p = s;
  for (int k = 0; k < count; k++) {
    char *end;
    errno = 0;
    out[k] = (float)strtod(p, &end);
    if (end == p || (errno && errno != ERANGE))
      return 0;
    if (k + 1 < count ? *end != ',' : *end != '\0')
      return 0;
    p = end + 1;
  }
  return 1;
}

static int parse_bool(const char *s, long long *out) {
  static const char *const on[] = {"1", "true", "yes", "on"}, *const off[] = {"0", "false", "no",
                                                                              "off"};
  for (int k = 0; k < 4; k++) {
    if (!strcasecmp(s, on[k]))
      return *out = 1, 1;
    if (!strcasecmp(s, off[k]))
      return *out = 0, 1;
  }
  return 0;
}

static int parse_choice(const ferry_option *opt, const char *s, long long *out) {
  for (int k = 0; opt->choices[k]; k++)
    if (!strcasecmp(s, opt->choices[k]))
      return *out = k, 1;
  for (int k = 0; opt->aliases && opt->aliases[k]; k += 2)
    if (!strcasecmp(s, opt->aliases[k]))
      return parse_choice(opt, opt->aliases[k + 1], out);
  return 0;
}

static int parse_device(const char *s, long long *out) {
  if (!strcasecmp(s, "cpu"))
    return *out = -1, 1;
  if (!strcasecmp(s, "cuda"))
    return *out = 0, 1;
  if (!strncasecmp(s, "cuda:", 5))
    return parse_int(s + 5, out) && *out >= 0;
  return parse_int(s, out);
}

/* Text to a value of the option's type (not range-checked). */
static int parse(const ferry_option *opt, const char *s, int mib, value *v) {
  memset(v, 0, sizeof *v);
  switch (opt->type) {
  case FERRY_OPTION_INT: return parse_int(s, &v->i) && v->i >= INT_MIN && v->i <= INT_MAX;
  case FERRY_OPTION_U64:
    if (!parse_u64(s, &v->u) || (mib && v->u > UINT64_MAX >> 20))
      return 0;
    v->u <<= mib ? 20 : 0;
    return 1;
  case FERRY_OPTION_FLOAT: return parse_floats(s, opt->count, v->f);
  case FERRY_OPTION_BOOL: return parse_bool(s, &v->i);
  case FERRY_OPTION_CHOICE: return parse_choice(opt, s, &v->i);
  case FERRY_OPTION_DEVICE: return parse_device(s, &v->i);
  }
  return 0;
}

static int set_text(ferry_loader_options *o, const char *name, const char *text) {
  const ferry_option *opt = ferry_loader_option_find(name);
  if (!o || !opt)
    return fy_error(FERRY_EINVAL, "no loader option '%s'", name ? name : "(null)");
  int by_flag = opt->flag && !strcmp(name, opt->flag);
  if (by_flag && opt->type == FERRY_OPTION_BOOL) {
    if (text)
      return fy_error(FERRY_EINVAL, "%s takes no value, got '%s'", name, text);
    text = strcmp(opt->default_value, "0") ? "0" : "1"; /* the flag turns the default round */
  } else if (!text && by_flag) {
    text = opt->flag_value;
  }
  char need[160];
  if (!text) {
    needs(opt, 0, need, sizeof need);
    return fy_error(FERRY_EINVAL, "%s needs a value: %s (%s)", name, need, opt->help);
  }
  int mib = by_flag && (opt->flags & FERRY_OPTION_MIB);
  value v;
  if (!parse(opt, text, mib, &v) || !in_range(opt, &v)) {
    if (opt->type == FERRY_OPTION_CHOICE)
      choice_list(opt, need, sizeof need);
    else
      needs(opt, mib, need, sizeof need);
    if (opt->type == FERRY_OPTION_CHOICE || opt->type == FERRY_OPTION_DEVICE)
      return fy_error(FERRY_EINVAL, "%s must be %s, not '%s'", name, need, text);
    return fy_error(FERRY_EINVAL, "%s needs %s, got '%s' (%s)", name, need, text, opt->help);
  }
  write_value(o, opt, &v);
  return FERRY_OK;
}

/* ------------------------------------------------------------ as text */

/* The shortest text that reads back as the same float. */
static void float_text(float x, char *out, size_t size) {
  for (int digits = 6; digits <= 9; digits++) {
    snprintf(out, size, "%.*g", digits, (double)x);
    if ((float)strtod(out, NULL) == x)
      return;
  }
}

static int value_text(const ferry_option *opt, const value *v, char *out, size_t size) {
  int n = 0;
  switch (opt->type) {
  case FERRY_OPTION_U64: n = snprintf(out, size, "%llu", (unsigned long long)v->u); break;
  case FERRY_OPTION_FLOAT:
    for (int k = 0; k < opt->count && (size_t)n < size; k++) {
      char one[32];
      float_text((float)v->f[k], one, sizeof one);
      n += snprintf(out + n, size - (size_t)n, "%s%s", k ? "," : "", one);
    }
    break;
  case FERRY_OPTION_CHOICE:
    if (v->i >= 0 && v->i <= opt->max) {
      n = snprintf(out, size, "%s", opt->choices[v->i]);
      break;
    }
    n = snprintf(out, size, "%lld", v->i);
    break;
  case FERRY_OPTION_DEVICE:
    n = v->i == -1  ? snprintf(out, size, "cpu")
        : v->i >= 0 ? snprintf(out, size, "cuda:%lld", v->i)
                    : snprintf(out, size, "%lld", v->i);
    break;
  default: n = snprintf(out, size, "%lld", v->i); break;
  }
  return n >= 0 && (size_t)n < size;
}

static int get_text(const ferry_loader_options *o, const char *name, char *text, size_t size) {
  const ferry_option *opt = ferry_loader_option_find(name);
  if (!o || !opt || !text || !size)
    return fy_error(FERRY_EINVAL, "no loader option '%s'", name ? name : "(null)");
  value v;
  read_value(o, opt, &v);
  if (!value_text(opt, &v, text, size))
    return fy_error(FERRY_EINVAL, "%s: a buffer of %zu bytes is too small", name, size);
  return FERRY_OK;
}

/* ------------------------------------------------ defaults and checks */

static void set_defaults(ferry_loader_options *o) {
  memset(o, 0, sizeof *o);
  for (int i = 0; i < fy_loader_option_table_count; i++) {
    const ferry_option *opt = &fy_loader_option_table[i];
    value v;
    if (parse(opt, opt->default_value, 0, &v)) /* test_options checks every default parses */
      write_value(o, opt, &v);
  }
}

static int check(const ferry_loader_options *o) {
  if (!o->source || !*o->source)
    return fy_error(FERRY_EINVAL, "loader: no source given");
  for (int i = 0; i < fy_loader_option_table_count; i++) {
    const ferry_option *opt = &fy_loader_option_table[i];
    value v, d;
    read_value(o, opt, &v);
    if (in_range(opt, &v) || (parse(opt, opt->default_value, 0, &d) && equal(opt, &v, &d)))
      continue;
    char got[96], need[160], dflt[80] = "";
    value_text(opt, &v, got, sizeof got);
    needs(opt, 0, need, sizeof need);
    if (!in_range(opt, &d))
      snprintf(dflt, sizeof dflt, ", or %s: the default", opt->default_value);
    return fy_error(FERRY_EINVAL, "loader: %s %s out of range: %s%s (%s)", opt->name, got, need,
                    dflt, opt->help);
  }
  if (o->rank >= o->world_size)
    return fy_error(FERRY_EINVAL, "loader: rank %d not in 0..world_size-1 (world_size %d)", o->rank,
                    o->world_size);
  if (o->cache_bytes && (o->crop == FERRY_CROP_RANDOM || o->flip_prob > 0))
    return fy_error(FERRY_EINVAL, "loader: the memory cache keeps samples as first made: it "
                                  "needs a deterministic pipeline (no random crop, no flip)");
  for (int c = 0; c < 3 && o->normalize; c++)
    if (!(o->std[c] >= 1e-6f && isfinite(o->std[c]) && isfinite(o->mean[c])))
      return fy_error(FERRY_EINVAL,
                      "loader: mean[%d] = %g and std[%d] = %g: the mean must be finite and the "
                      "std finite and >= 1e-6 (else every value is inf or NaN)",
                      c, o->mean[c], c, o->std[c]);
  return FERRY_OK;
}

/* ------------------------------------------ in the "C" locale, always */

int ferry_loader_options_set(ferry_loader_options *o, const char *name, const char *text) {
  locale_t old = c_locale_enter();
  int rc = set_text(o, name, text);
  c_locale_leave(old);
  return rc;
}

int ferry_loader_options_get(const ferry_loader_options *o, const char *name, char *text,
                             size_t size) {
  locale_t old = c_locale_enter();
  int rc = get_text(o, name, text, size);
  c_locale_leave(old);
  return rc;
}

void ferry_loader_options_default(ferry_loader_options *o) {
  locale_t old = c_locale_enter();
  set_defaults(o);
  c_locale_leave(old);
}

int fy_loader_options_check(const ferry_loader_options *o) {
  locale_t old = c_locale_enter();
  int rc = check(o);
  c_locale_leave(old);
  return rc;
}
