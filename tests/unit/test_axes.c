/*
 * test_axes.c - benchmark axes: the -a syntax (accepted and rejected, with
 * exact messages), the cartesian product's order and count, formatting,
 * and axes from a JSON sweep spec.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bench/axes_internal.h"
#include "testutil.h"
#include "vyre/axes.h"

/* Parses one axis, asserts success, returns it formatted as "v1 v2 ...". */
static void values_text(const char *spec, char *out, size_t size, vyre_axis_type *type)
{
    vyre_axes ax;
    vyre_axes_init(&ax);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_axes_add(&ax, spec, &e), 0, "'%s': %s", spec, e.message);
    cr_assert_eq(ax.n, 1);
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < ax.axis[0].n; i++) {
        char v[64];
        vyre__axes_format_value(&ax, 0, i, v, sizeof v);
        len += (size_t)snprintf(out + len, size - len, "%s%s", i ? " " : "", v);
        cr_assert(len < size);
    }
    *type = ax.axis[0].type;
    vyre_axes_release(&ax);
}

Test(axes, accepted)
{
    static const struct {
        const char *spec;
        const char *values;
        vyre_axis_type type;
    } cases[] = {
        {"N=4096", "4096", VYRE_AXIS_INT},
        {"BLOCK=128,256,512", "128 256 512", VYRE_AXIS_INT},
        {"BLOCK=512,128,256", "512 128 256", VYRE_AXIS_INT}, /* order as written */
        /* 1024 * 4^k <= 2^26: k = 0..8. */
        {"N=1024:67108864:x4", "1024 4096 16384 65536 262144 1048576 4194304 16777216 67108864",
         VYRE_AXIS_INT},
        {"N=1K:64M:x4", "1024 4096 16384 65536 262144 1048576 4194304 16777216 67108864",
         VYRE_AXIS_INT},
        {"N=1:100:x10", "1 10 100", VYRE_AXIS_INT},
        {"N=1:99:x10", "1 10", VYRE_AXIS_INT},
        {"N=3:3:x2", "3", VYRE_AXIS_INT},
        {"N=0:100:+25", "0 25 50 75 100", VYRE_AXIS_INT},
        {"N=0:99:+25", "0 25 50 75", VYRE_AXIS_INT},
        {"N=0:2K:+1K", "0 1024 2048", VYRE_AXIS_INT},
        {"N=1:8", "1 2 3 4 5 6 7 8", VYRE_AXIS_INT},
        {"N=-10:10:+10", "-10 0 10", VYRE_AXIS_INT},
        {"OFFSET=-4,0,4", "-4 0 4", VYRE_AXIS_INT},
        {"SIZE=1K,1.5K,2KB,1MiB", "1024 1536 2000 1048576", VYRE_AXIS_INT},
        {"_tile_M2=7", "7", VYRE_AXIS_INT},
        {"N=9223372036854775807", "9223372036854775807", VYRE_AXIS_INT},
        {"N=-9223372036854775808", "-9223372036854775808", VYRE_AXIS_INT},
        {"N=9223372036854775806:9223372036854775807", "9223372036854775806 9223372036854775807",
         VYRE_AXIS_INT},
        {"N=-9223372036854775808:9223372036854775807:+9223372036854775807",
         "-9223372036854775808 -1 9223372036854775806", VYRE_AXIS_INT},
        {"N=4611686018427387904:9223372036854775807:x2", "4611686018427387904", VYRE_AXIS_INT},
        {"ALPHA=0.5,1.0,2", "0.5 1 2", VYRE_AXIS_FLOAT},
        {"ALPHA=0.5:2:x2", "0.5 1 2", VYRE_AXIS_FLOAT},
        {"ALPHA=1.0:3:x1.5", "1 1.5 2.25", VYRE_AXIS_FLOAT},
        {"ALPHA=0:1:+0.25", "0 0.25 0.5 0.75 1", VYRE_AXIS_FLOAT},
        {"ALPHA=0:0.3:+0.1", "0 0.1 0.2 0.3", VYRE_AXIS_FLOAT},
        {"EPS=1e-3,-2.5E2,.5,5.", "0.001 -250 0.5 5", VYRE_AXIS_FLOAT},
        {"THIRD=0.3333333333333333", "0.3333333333333333", VYRE_AXIS_FLOAT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char got[512];
        vyre_axis_type type;
        values_text(cases[i].spec, got, sizeof got, &type);
        cr_assert_str_eq(got, cases[i].values, "'%s'", cases[i].spec);
        cr_assert_eq(type, cases[i].type, "'%s' type", cases[i].spec);
    }
    /* 63 doublings fit in int64 without overflow. */
    vyre_axes ax;
    vyre_axes_init(&ax);
    cr_assert_eq(vyre_axes_add(&ax, "N=1:9223372036854775807:x2", NULL), 0);
    cr_assert_eq(ax.axis[0].n, 63);
    cr_assert_eq(ax.axis[0].values.i[62], INT64_C(1) << 62);
    cr_assert_str_eq(ax.axis[0].text, "1:9223372036854775807:x2");
    vyre_axes_release(&ax);
}

Test(axes, rejected_with_exact_messages)
{
    static const struct {
        const char *spec;
        int code;
        const char *msg;
    } cases[] = {
        {"N1024", VYRE_EINVAL, "axis 'N1024' is not NAME=VALUES"},
        {"=5", VYRE_EINVAL, "axis '=5' has no name"},
        {"1N=5", VYRE_EINVAL, "axis name '1N' is not valid"},
        {"N-M=5", VYRE_EINVAL, "axis name 'N-M' is not valid"},
        {"N =5", VYRE_EINVAL, "axis name 'N ' is not valid"},
        {"N=", VYRE_EINVAL, "axis 'N' has no values"},
        {"N=abc", VYRE_EINVAL, "value 'abc' of axis 'N' is not a number"},
        {"N=inf", VYRE_EINVAL, "value 'inf' of axis 'N' is not a number"},
        {"N=nan", VYRE_EINVAL, "value 'nan' of axis 'N' is not a number"},
        {"N=0x10", VYRE_EINVAL, "value '0x10' of axis 'N' is not a number"},
        {"N=+5", VYRE_EINVAL, "value '+5' of axis 'N' is not a number"},
        {"N= 5", VYRE_EINVAL, "value ' 5' of axis 'N' is not a number"},
        {"N=1e", VYRE_EINVAL, "value '1e' of axis 'N' is not a number"},
        {"N=1,,2", VYRE_EINVAL, "axis 'N' has an empty value in '1,,2'"},
        {"N=1,2,", VYRE_EINVAL, "axis 'N' has an empty value in '1,2,'"},
        {"N=1:4,8", VYRE_EINVAL, "value '4,8' of axis 'N' is not a number"},
        {"N=1:", VYRE_EINVAL, "value '' of axis 'N' is not a number"},
        {"N=100:1:+1", VYRE_EINVAL,
         "range '100:1:+1' of axis 'N' is empty: start '100' is above stop '1'"},
        {"N=64M:1K:x4", VYRE_EINVAL,
         "range '64M:1K:x4' of axis 'N' is empty: start '64M' is above stop '1K'"},
        {"A=1.5:1", VYRE_EINVAL,
         "range '1.5:1' of axis 'A' is empty: start '1.5' is above stop '1'"},
        {"N=0:100:+0", VYRE_EINVAL, "step '+0' of axis 'N' is zero"},
        {"A=0:1:+0.0", VYRE_EINVAL, "step '+0.0' of axis 'A' is zero"},
        {"N=0:100:+-5", VYRE_EINVAL, "step '+-5' of axis 'N' is negative"},
        {"N=0:100:+x", VYRE_EINVAL, "step 'x' of axis 'N' is not a number"},
        {"N=1:100:x1", VYRE_EINVAL, "factor 'x1' of axis 'N' must be above 1"},
        {"N=1:100:x0.5", VYRE_EINVAL, "factor 'x0.5' of axis 'N' must be above 1"},
        {"N=1:100:x0", VYRE_EINVAL, "factor 'x0' of axis 'N' must be above 1"},
        {"N=1:100:x1.5", VYRE_EINVAL,
         "factor 'x1.5' of axis 'N' must be a whole number on an integer axis"},
        {"N=1:100:xK", VYRE_EINVAL, "factor 'xK' of axis 'N' is not a number"},
        {"N=1:100:x", VYRE_EINVAL, "factor 'x' of axis 'N' is not a number"},
        {"N=1:100:x2K", VYRE_EINVAL, "factor 'x2K' of axis 'N' is not a number"},
        {"N=1:100:2", VYRE_EINVAL,
         "step '2' of axis 'N' must start with 'x' (geometric) or '+' (arithmetic)"},
        {"N=1:100:", VYRE_EINVAL,
         "step '' of axis 'N' must start with 'x' (geometric) or '+' (arithmetic)"},
        {"N=0:100:x2", VYRE_EINVAL, "geometric range '0:100:x2' of axis 'N' must start above 0"},
        {"N=-4:100:x2", VYRE_EINVAL, "geometric range '-4:100:x2' of axis 'N' must start above 0"},
        {"N=1:2:x2:4", VYRE_EINVAL, "range '1:2:x2:4' of axis 'N' is not START:STOP[:STEP]"},
        {"N=9223372036854775808", VYRE_ERANGE,
         "value '9223372036854775808' of axis 'N' is out of range"},
        {"N=-9223372036854775809", VYRE_ERANGE,
         "value '-9223372036854775809' of axis 'N' is out of range"},
        {"N=99999999999999999999999", VYRE_ERANGE,
         "value '99999999999999999999999' of axis 'N' is out of range"},
        {"N=8388608T", VYRE_ERANGE, "value '8388608T' of axis 'N' is out of range"},
        {"N=0:1:+9223372036854775808", VYRE_ERANGE,
         "step '9223372036854775808' of axis 'N' is out of range"},
        {"A=1e999", VYRE_ERANGE, "value '1e999' of axis 'A' is out of range"},
        {"N=0:2000000", VYRE_ERANGE, "axis 'N' would have more than 1000000 values"},
        {"N=0:1000000", VYRE_ERANGE, "axis 'N' would have more than 1000000 values"},
        {"A=0:1:+1e-7", VYRE_ERANGE, "axis 'A' would have more than 1000000 values"},
        {"N=1,2,1", VYRE_EINVAL, "axis 'N' lists value '1' twice"},
        {"N=1K,1024", VYRE_EINVAL, "axis 'N' lists value '1024' twice"},
        {"A=0.5,1,0.50", VYRE_EINVAL, "axis 'A' lists value '0.5' twice"},
        {"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=1", VYRE_EINVAL,
         "axis name 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' is too "
         "long"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vyre_axes ax;
        vyre_axes_init(&ax);
        vyre_error e;
        vyre_error_clear(&e);
        int rc = vyre_axes_add(&ax, cases[i].spec, &e);
        cr_assert_eq(rc, cases[i].code, "'%s': rc %d (%s)", cases[i].spec, rc, e.message);
        cr_assert_str_eq(e.message, cases[i].msg, "'%s'", cases[i].spec);
        cr_assert_neq(e.hint[0], '\0', "'%s' has no hint", cases[i].spec);
        cr_assert_eq(ax.n, 0, "'%s' left an axis behind", cases[i].spec);
        vyre_axes_release(&ax);
    }
    /* The 63-character limit is exact. */
    vyre_axes ax;
    vyre_axes_init(&ax);
    cr_assert_eq(vyre_axes_add(&ax,
                               "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=1",
                               NULL),
                 0);
    vyre_axes_release(&ax);
}

Test(axes, hints)
{
    vyre_axes ax;
    vyre_axes_init(&ax);
    vyre_error e;
    cr_assert_eq(vyre_axes_add(&ax, "N1024", &e), VYRE_EINVAL);
    cr_assert_str_eq(e.hint, "write an axis such as N=1024:67108864:x4 (geometric), "
                             "N=0:100:+25 (arithmetic), BLOCK=128,256,512 (list) or N=4096; "
                             "integers may use size suffixes (1K:64M:x4, K/M/G are powers of "
                             "1024)");
    cr_assert_eq(vyre_axes_add(&ax, "N=100:1", &e), VYRE_EINVAL);
    cr_assert_str_eq(e.hint, "write the smaller value first; ranges only count up");
    cr_assert_eq(vyre_axes_add(&ax, "N=1:9:x1", &e), VYRE_EINVAL);
    cr_assert_str_eq(e.hint, "use a factor such as x2 or x4");
    cr_assert_eq(vyre_axes_add(&ax, "N=1:9:+0", &e), VYRE_EINVAL);
    cr_assert_str_eq(e.hint, "use a positive step such as +1 or +25");
    vyre_axes_release(&ax);
}

Test(axes, sequence_errors_leave_the_set_unchanged)
{
    vyre_axes ax;
    vyre_axes_init(&ax);
    vyre_error e;
    cr_assert_eq(vyre_axes_add(&ax, "N=1:1000", &e), 0);
    cr_assert_eq(vyre_axes_add(&ax, "M=1:1000", &e), 0);
    cr_assert_eq(vyre__axes_count(&ax), 1000000);
    cr_assert_eq(vyre_axes_add(&ax, "K=1,2", &e), VYRE_ERANGE);
    cr_assert_str_eq(e.message, "axis 'K' would make the sweep 2000000 points (at most 1000000)");
    cr_assert_str_eq(e.hint, "narrow a range, use a larger step or factor, or split the sweep into "
                             "several runs");
    cr_assert_eq(vyre_axes_add(&ax, "N=5", &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "axis 'N' is given twice");
    cr_assert_eq(ax.n, 2);
    /* A one-value axis does not grow the product. */
    cr_assert_eq(vyre_axes_add(&ax, "K=3", &e), 0);
    cr_assert_eq(vyre__axes_count(&ax), 1000000);
    vyre_axes_release(&ax);
    cr_assert_eq(ax.n, 0);
    vyre_axes_release(NULL);

    vyre_axes_init(&ax);
    for (int i = 0; i < VYRE_AXES_MAX; i++) {
        char spec[32];
        snprintf(spec, sizeof spec, "A%d=%d", i, i);
        cr_assert_eq(vyre_axes_add(&ax, spec, &e), 0, "%s: %s", spec, e.message);
    }
    cr_assert_eq(vyre_axes_add(&ax, "X=1", &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "too many axes: 'X' would be number 65 (at most 64)");
    cr_assert_eq(vyre__axes_count(&ax), 1);
    cr_assert_eq(vyre__axes_find(&ax, "A63"), 63);
    cr_assert_eq(vyre__axes_find(&ax, "X"), -1);
    vyre_axes_release(&ax);
}

Test(axes, product_order_and_formatting)
{
    vyre_axes ax;
    vyre_axes_init(&ax);
    /* No axes: exactly one point, formatted as nothing. */
    cr_assert_eq(vyre__axes_count(&ax), 1);
    char buf[128];
    cr_assert_eq(vyre__axes_format_point(&ax, NULL, buf, sizeof buf), 0);
    cr_assert_str_eq(buf, "");

    cr_assert_eq(vyre_axes_add(&ax, "N=1K:4K:x2", NULL), 0);
    cr_assert_eq(vyre_axes_add(&ax, "BLOCK=128,256", NULL), 0);
    cr_assert_eq(vyre__axes_add_values(&ax, "ALPHA", "0.5,1.0", NULL), 0);
    cr_assert_eq(vyre__axes_count(&ax), 12);
    static const char *const want[] = {
        "N=1024 BLOCK=128 ALPHA=0.5", "N=1024 BLOCK=128 ALPHA=1",   "N=1024 BLOCK=256 ALPHA=0.5",
        "N=1024 BLOCK=256 ALPHA=1",   "N=2048 BLOCK=128 ALPHA=0.5", "N=2048 BLOCK=128 ALPHA=1",
        "N=2048 BLOCK=256 ALPHA=0.5", "N=2048 BLOCK=256 ALPHA=1",   "N=4096 BLOCK=128 ALPHA=0.5",
        "N=4096 BLOCK=128 ALPHA=1",   "N=4096 BLOCK=256 ALPHA=0.5", "N=4096 BLOCK=256 ALPHA=1",
    };
    size_t coords[VYRE_AXES_MAX];
    for (size_t i = 0; i < 12; i++) {
        cr_assert_eq(vyre__axes_point(&ax, i, coords), 0);
        size_t len = vyre__axes_format_point(&ax, coords, buf, sizeof buf);
        cr_assert_str_eq(buf, want[i], "point %zu", i);
        cr_assert_eq(len, strlen(want[i]));
    }
    cr_assert_eq(vyre__axes_point(&ax, 12, coords), VYRE_ERANGE);

    /* Truncation reports the full length and still terminates. */
    cr_assert_eq(vyre__axes_point(&ax, 11, coords), 0);
    char small[10];
    cr_assert_eq(vyre__axes_format_point(&ax, coords, small, sizeof small), strlen(want[11]));
    cr_assert_str_eq(small, "N=4096 BL");
    cr_assert_eq(vyre__axes_format_point(&ax, coords, NULL, 0), strlen(want[11]));

    /* Typed access. */
    cr_assert_eq(vyre__axes_value_i(&ax, 0, 2), 4096);
    cr_assert_eq(vyre__axes_value_f(&ax, 1, 1), 256.0);
    cr_assert_eq(vyre__axes_value_f(&ax, 2, 0), 0.5);
    cr_assert_eq(vyre__axes_value_i(&ax, 2, 0), 0);
    cr_assert_eq(ax.axis[2].type, VYRE_AXIS_FLOAT);
    cr_assert_str_eq(ax.axis[0].text, "1K:4K:x2");
    vyre_axes_release(&ax);
}

/* ---- JSON sweep spec ---- */

Test(axes, json_spec)
{
    const char *text = "{\"kernel\": \"saxpy.cu\", \"entry\": \"saxpy\",\n"
                       " \"axes\": {\"N\": \"1K:1M:x4\", \"BLOCK\": [128, 256],\n"
                       "          \"ALPHA\": 0.5, \"S\": [\"1K\", 2048], \"R\": [1, 2.5]},\n"
                       " \"args\": [\"N\", \"ALPHA\", {\"buffer\": \"N\"}]}";
    vyre_sweep_spec s;
    vyre_error e;
    cr_assert_eq(vyre__sweep_spec_parse(&s, text, "sweep.json", &e), 0, "%s", e.message);
    cr_assert_str_eq(s.kernel, "saxpy.cu");
    cr_assert_str_eq(s.kernel_path, "saxpy.cu");
    cr_assert_str_eq(s.entry, "saxpy");
    cr_assert_eq(s.axes.n, 5);
    /* Object order is kept. N: 1024 * 4^k <= 2^20, k = 0..5. */
    cr_assert_str_eq(s.axes.axis[0].name, "N");
    cr_assert_eq(s.axes.axis[0].n, 6);
    cr_assert_eq(s.axes.axis[0].values.i[5], 1048576);
    cr_assert_str_eq(s.axes.axis[1].name, "BLOCK");
    cr_assert_str_eq(s.axes.axis[1].text, "[128,256]");
    cr_assert_eq(s.axes.axis[1].type, VYRE_AXIS_INT);
    cr_assert_str_eq(s.axes.axis[2].name, "ALPHA");
    cr_assert_eq(s.axes.axis[2].type, VYRE_AXIS_FLOAT);
    cr_assert_str_eq(s.axes.axis[2].text, "0.5");
    cr_assert_eq(s.axes.axis[3].values.i[0], 1024);
    cr_assert_eq(s.axes.axis[3].values.i[1], 2048);
    cr_assert_eq(s.axes.axis[4].type, VYRE_AXIS_FLOAT, "one real makes the axis float");
    cr_assert_eq(vyre__axes_count(&s.axes), 6 * 2 * 1 * 2 * 2);
    cr_assert(strstr(s.json, "\"args\":[\"N\",\"ALPHA\",{\"buffer\":\"N\"}]"), "%s", s.json);
    vyre_sweep_spec_release(&s);
    vyre_sweep_spec_release(NULL);

    /* Everything optional: no kernel, no entry, no axes, one point. */
    cr_assert_eq(vyre__sweep_spec_parse(&s, "{}", NULL, &e), 0);
    cr_assert_null(s.kernel);
    cr_assert_null(s.kernel_path);
    cr_assert_null(s.entry);
    cr_assert_eq(vyre__axes_count(&s.axes), 1);
    vyre_sweep_spec_release(&s);
}

Test(axes, json_spec_rejected)
{
    static const struct {
        const char *text;
        int code;
        const char *msg;
    } cases[] = {
        {"[]", VYRE_EINVAL, "'spec.json': $ must be an object, not an array"},
        {"{\"kernel\": 5}", VYRE_EINVAL, "'spec.json': $.kernel must be a string, not a number"},
        {"{\"kernel\": \"\"}", VYRE_EINVAL, "'spec.json': $.kernel is empty"},
        {"{\"entry\": null}", VYRE_EINVAL, "'spec.json': $.entry must be a string, not null"},
        {"{\"axes\": []}", VYRE_EINVAL, "'spec.json': $.axes must be an object, not an array"},
        {"{\"axes\": {\"N\": true}}", VYRE_EINVAL,
         "'spec.json': $.axes.N must be a string, a number or an array, not true"},
        {"{\"axes\": {\"N\": {}}}", VYRE_EINVAL,
         "'spec.json': $.axes.N must be a string, a number or an array, not an object"},
        {"{\"axes\": {\"N\": []}}", VYRE_EINVAL, "'spec.json': $.axes.N is an empty array"},
        {"{\"axes\": {\"BLOCK\": [128, \"x\"]}}", VYRE_EINVAL,
         "'spec.json': $.axes.BLOCK[1]: value 'x' of axis 'BLOCK' is not a number"},
        {"{\"axes\": {\"BLOCK\": [128, \"1:4\"]}}", VYRE_EINVAL,
         "'spec.json': $.axes.BLOCK[1]: value '1:4' of axis 'BLOCK' is not a number"},
        {"{\"axes\": {\"BLOCK\": [128, {}]}}", VYRE_EINVAL,
         "'spec.json': $.axes.BLOCK[1] must be a number or a string, not an object"},
        {"{\"axes\": {\"N\": \"100:1\"}}", VYRE_EINVAL,
         "'spec.json': $.axes.N: range '100:1' of axis 'N' is empty: start '100' is above stop "
         "'1'"},
        {"{\"axes\": {\"N\": \"0:9:+0\"}}", VYRE_EINVAL,
         "'spec.json': $.axes.N: step '+0' of axis 'N' is zero"},
        {"{\"axes\": {\"1N\": 5}}", VYRE_EINVAL,
         "'spec.json': $.axes.1N: axis name '1N' is not valid"},
        {"{\"axes\": {\"B\": [1, 1]}}", VYRE_EINVAL,
         "'spec.json': $.axes.B: axis 'B' lists value '1' twice"},
        {"{\"axes\": {\"N\": \"1:1000\", \"M\": \"1:1001\"}}", VYRE_ERANGE,
         "'spec.json': $.axes.M: axis 'M' would make the sweep 1001000 points (at most "
         "1000000)"},
        {"{\"axes\": {\"N\": \"9223372036854775808\"}}", VYRE_ERANGE,
         "'spec.json': $.axes.N: value '9223372036854775808' of axis 'N' is out of range"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vyre_sweep_spec s;
        vyre_error e;
        vyre_error_clear(&e);
        int rc = vyre__sweep_spec_parse(&s, cases[i].text, "spec.json", &e);
        cr_assert_eq(rc, cases[i].code, "%s: rc %d (%s)", cases[i].text, rc, e.message);
        cr_assert_str_eq(e.message, cases[i].msg, "%s", cases[i].text);
        cr_assert_neq(e.hint[0], '\0', "%s has no hint", cases[i].text);
        cr_assert_null(s.kernel);
        cr_assert_eq(s.axes.n, 0);
    }
    /* Syntax errors and repeated keys come from the JSON parser; the
     * message says where. */
    static const char *const bad_json[] = {"{", "{\"axes\": {\"N\": 1, \"N\": 2}}", "",
                                           "{\"axes\": {\"N\": [1,]}}"};
    for (size_t i = 0; i < sizeof bad_json / sizeof bad_json[0]; i++) {
        vyre_sweep_spec s;
        vyre_error e;
        cr_assert_eq(vyre__sweep_spec_parse(&s, bad_json[i], NULL, &e), VYRE_EINVAL);
        cr_assert(strncmp(e.message, "'spec' is not valid JSON: ", 26) == 0, "%s", e.message);
        cr_assert(strstr(e.message, "(line 1, column "), "%s", e.message);
    }
}

Test(axes, json_spec_load)
{
    char dir[512], path[600], sub[600];
    tu_mkdtemp(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    const char *text = "{\"kernel\": \"kernels/saxpy.cu\", \"entry\": \"saxpy\", "
                       "\"axes\": {\"N\": [1, 2]}}";
    tu_write_file(path, text, strlen(text));
    vyre_sweep_spec s;
    vyre_error e;
    cr_assert_eq(vyre_sweep_spec_load(&s, path, &e), 0, "%s", e.message);
    cr_assert_str_eq(s.kernel, "kernels/saxpy.cu");
    snprintf(sub, sizeof sub, "%s/kernels/saxpy.cu", dir);
    cr_assert_str_eq(s.kernel_path, sub);
    cr_assert_eq(vyre__axes_count(&s.axes), 2);
    vyre_sweep_spec_release(&s);

    const char *abs_text = "{\"kernel\": \"/opt/k.ptx\"}";
    tu_write_file(path, abs_text, strlen(abs_text));
    cr_assert_eq(vyre_sweep_spec_load(&s, path, &e), 0, "%s", e.message);
    cr_assert_str_eq(s.kernel_path, "/opt/k.ptx");
    vyre_sweep_spec_release(&s);

    const char *bad = "{\"axes\": {\"N\": \"0:1:+0\"}}";
    tu_write_file(path, bad, strlen(bad));
    cr_assert_eq(vyre_sweep_spec_load(&s, path, &e), VYRE_EINVAL);
    char want[800];
    snprintf(want, sizeof want, "'%s': $.axes.N: step '+0' of axis 'N' is zero", path);
    cr_assert_str_eq(e.message, want);

    snprintf(sub, sizeof sub, "%s/missing.json", dir);
    cr_assert_eq(vyre_sweep_spec_load(&s, sub, &e), VYRE_ENOENT);
    snprintf(want, sizeof want, "cannot read spec '%s': No such file or directory", sub);
    cr_assert_str_eq(e.message, want);
    cr_assert_str_eq(e.hint, "check the path of the spec file");
    tu_rm_rf(dir);
}

/* Issue 34, point 5: -a over a spec's axis replaces its values in place
 * (nvbench's -a), narrower or new; an axis the set lacks is refused with
 * the names it has, and any failure leaves the set as it was. */
Test(axes, override_replaces_in_place_and_names_the_axes_there_are)
{
    vyre_axes ax;
    vyre_axes_init(&ax);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_axes_add(&ax, "M=1,2", &e), 0);
    cr_assert_eq(vyre_axes_add(&ax, "N=1M:256M:x4", &e), 0);
    cr_assert_eq(vyre_axes_add(&ax, "K=7", &e), 0);
    cr_assert_eq(vyre__axes_count(&ax), 10);

    cr_assert_eq(vyre_axes_override(&ax, "N=1M", &e), 0, "%s", e.message);
    cr_assert_eq(ax.n, 3);
    cr_assert_str_eq(ax.axis[1].name, "N", "the axis keeps its place");
    cr_assert_eq(ax.axis[1].n, 1);
    cr_assert_eq(ax.axis[1].values.i[0], 1048576);
    cr_assert_str_eq(ax.axis[1].text, "1M");
    cr_assert_eq(vyre__axes_count(&ax), 2);
    /* New values, and a float axis in place of an integer one. */
    cr_assert_eq(vyre_axes_override(&ax, "M=3,5,9", &e), 0, "%s", e.message);
    cr_assert_eq(ax.axis[0].n, 3);
    cr_assert_eq(ax.axis[0].values.i[2], 9);
    cr_assert_eq(vyre_axes_override(&ax, "K=0.5,1.5", &e), 0, "%s", e.message);
    cr_assert_eq(ax.axis[2].type, VYRE_AXIS_FLOAT);
    cr_assert_eq(vyre__axes_count(&ax), 6);

    cr_assert_eq(vyre_axes_override(&ax, "BLOCK=128", &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "axis 'BLOCK' is not one of the spec's axes (M, N, K)");
    cr_assert(strstr(e.hint, "add the axis to the spec's \"axes\""), "%s", e.hint);
    cr_assert_eq(vyre_axes_override(&ax, "N=1,1", &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "axis 'N' lists value '1' twice");
    cr_assert_eq(vyre_axes_override(&ax, "N=1:2000000", &e), VYRE_ERANGE);
    cr_assert_eq(vyre_axes_override(&ax, "N=1:500000", &e), VYRE_ERANGE);
    cr_assert_str_eq(e.message, "axis 'N' would make the sweep 3000000 points (at most 1000000)");
    cr_assert_eq(ax.n, 3);
    cr_assert_eq(ax.axis[1].values.i[0], 1048576, "failures leave the set unchanged");
    cr_assert_eq(vyre__axes_count(&ax), 6);
    vyre_axes_release(&ax);

    vyre_axes_init(&ax);
    cr_assert_eq(vyre_axes_override(&ax, "N=1", &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "axis 'N' is not one of the spec's axes (it has none)");
    vyre_axes_release(&ax);
}
