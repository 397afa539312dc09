/* What C may pass across the boundary that the Rust side must not trust (issue 21, N7 and N11):
 * integers the enums do not name, and word counts no buffer has. Each call must return a code
 * and print nothing; the program prints what went wrong and exits 1, or prints "done". */
#include "spv_subgroup.h"

#include <stdio.h>
#include <string.h>

static int failures = 0;

static void expect(const char *what, spvsg_result_t got, spvsg_result_t want) {
    if (got != want) {
        printf("%s: got %d, want %d\n", what, (int)got, (int)want);
        failures++;
    }
}

/* spvsg_validate and spvsg_lower with `count` words at `words` (never read here): `want`, no
 * object handed out, a diagnostic with the same code. */
static void huge_count(const uint32_t *words, size_t count, spvsg_result_t want) {
    spvsg_context_t *ctx = spvsg_context_create();
    spvsg_report_t *report = NULL;
    spvsg_binary_t *binary = NULL;
    spvsg_diagnostic_t *diag = NULL;
    char what[96];
    snprintf(what, sizeof what, "validate with word_count %zu", count);
    expect(what, spvsg_validate(ctx, words, count, &report, &diag), want);
    if (report != NULL || diag == NULL || diag->code != want) {
        printf("%s: report %p, diagnostic %p\n", what, (void *)report, (void *)diag);
        failures++;
    }
    spvsg_diagnostic_destroy(diag);
    snprintf(what, sizeof what, "lower with word_count %zu", count);
    expect(what, spvsg_lower(ctx, words, count, &binary, NULL), want);
    if (binary != NULL) {
        printf("%s: a binary was handed out\n", what);
        failures++;
    }
    spvsg_context_destroy(ctx);
}

int main(void) {
    /* Result codes the enum does not name: a static "unknown" string, never a crash. */
    const int unknown[] = {2, 42, -8, -100, 0x7fffffff, -0x7fffffff - 1};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        const char *s = spvsg_result_string((spvsg_result_t)unknown[i]);
        if (s == NULL || strcmp(s, "unknown result code") != 0) {
            printf("result_string(%d) = %s\n", unknown[i], s ? s : "(null)");
            failures++;
        }
    }
    const spvsg_result_t known[] = {SPVSG_SUCCESS, SPVSG_FINDINGS, SPVSG_ERROR_NULL_POINTER,
                                    SPVSG_ERROR_INVALID_ARGUMENT, SPVSG_ERROR_INVALID_BINARY,
                                    SPVSG_ERROR_INVALID_MODULE, SPVSG_ERROR_UNSUPPORTED,
                                    SPVSG_ERROR_INTERNAL, SPVSG_ERROR_OUT_OF_MEMORY};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        const char *s = spvsg_result_string(known[i]);
        if (s == NULL || strcmp(s, "unknown result code") == 0) {
            printf("result_string(%d) = %s\n", (int)known[i], s ? s : "(null)");
            failures++;
        }
    }

    /* Float partition modes the enum does not name are refused and change nothing. */
    spvsg_context_t *ctx = spvsg_context_create();
    expect("float partition 2", spvsg_context_set_float_partition(ctx, (spvsg_float_partition_t)2),
           SPVSG_ERROR_INVALID_ARGUMENT);
    expect("float partition -1",
           spvsg_context_set_float_partition(ctx, (spvsg_float_partition_t)-1),
           SPVSG_ERROR_INVALID_ARGUMENT);
    expect("float partition bitwise",
           spvsg_context_set_float_partition(ctx, SPVSG_FLOAT_PARTITION_BITWISE), SPVSG_SUCCESS);
    spvsg_context_destroy(ctx);

    /* Counts beyond any buffer (more than PTRDIFF_MAX bytes) are invalid arguments; a count
     * whose module could not fit in memory (2^58 words: 1 EiB) is out of memory. Neither reads
     * a word of the 5-word buffer. */
    const uint32_t words[5] = {0x07230203u, 0x00010300u, 0, 1, 0};
    huge_count(words, (size_t)-1, SPVSG_ERROR_INVALID_ARGUMENT);
    huge_count(words, (size_t)-1 / 4, SPVSG_ERROR_INVALID_ARGUMENT);
    huge_count(words, (size_t)1 << 62, SPVSG_ERROR_INVALID_ARGUMENT);
    huge_count(words, (size_t)1 << 58, SPVSG_ERROR_OUT_OF_MEMORY);

    /* A module at an address that is not 4-byte aligned (read from a byte buffer at an offset)
     * gets the same answer as the aligned one, not an abort. */
    const uint32_t module[] = {0x07230203u, 0x00010300u, 0, 1, 0,
                               0x00020011u, 1,     /* OpCapability Shader */
                               0x0003000eu, 0, 1}; /* OpMemoryModel Logical GLSL450 */
    size_t n = sizeof module / sizeof module[0];
    static unsigned char bytes[sizeof module + 4];
    memcpy(bytes + 1, module, sizeof module);
    spvsg_context_t *plain = spvsg_context_create();
    spvsg_report_t *report = NULL;
    spvsg_binary_t *binary = NULL;
    spvsg_result_t aligned = spvsg_validate(plain, module, n, &report, NULL);
    spvsg_report_destroy(report);
    expect("validate of the aligned module", aligned, SPVSG_SUCCESS);
    expect("validate at an odd address",
           spvsg_validate(plain, (const uint32_t *)(void *)(bytes + 1), n, &report, NULL),
           aligned);
    spvsg_report_destroy(report);
    spvsg_result_t lowered = spvsg_lower(plain, module, n, &binary, NULL);
    spvsg_binary_destroy(binary);
    expect("lower at an odd address",
           spvsg_lower(plain, (const uint32_t *)(void *)(bytes + 1), n, &binary, NULL), lowered);
    spvsg_binary_destroy(binary);
    spvsg_context_destroy(plain);

    if (failures == 0) {
        printf("done\n");
    }
    return failures == 0 ? 0 : 1;
}
