/* Lower a SPIR-V module with the spv-subgroup C interface, then check the result.
 *
 *   lower_and_validate IN.spv OUT.spv
 *
 * Lowers IN.spv for Vulkan 1.1 core subgroup features (the default target) and writes OUT.spv.
 * It is the example of docs/capi.md and the test program of tests/c_program.rs, so every step
 * also checks what the library promises; it exits 0 when all checks pass. */
#include "spv_subgroup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond, what)                                                    \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "check failed (line %d): %s\n", __LINE__, what); \
            return 1;                                                        \
        }                                                                    \
    } while (0)

/* Reads a whole file as 32-bit words (the module must be in host byte order). */
static uint32_t *read_words(const char *path, size_t *count) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint32_t *words = malloc(bytes > 0 ? (size_t)bytes : 1);
    *count = words ? fread(words, 4, (size_t)bytes / 4, f) : 0;
    fclose(f);
    return words;
}

/* Prints every finding of a report, one line each, as the CLI does. */
static void print_findings(const spvsg_report_t *report) {
    const spvsg_finding_t *f = spvsg_report_findings(report);
    for (size_t i = 0; i < spvsg_report_count(report); i++) {
        printf("%s[%s]: %s (word %zu)\n",
               f[i].severity == SPVSG_SEVERITY_ERROR ? "error" : "warning",
               f[i].code, f[i].message, f[i].word_offset);
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s IN.spv OUT.spv\n", argv[0]);
        return 2;
    }
    size_t count = 0;
    uint32_t *words = read_words(argv[1], &count);
    CHECK(words && count > 5, "read the input module");

    spvsg_context_t *ctx = spvsg_context_create();
    CHECK(ctx != NULL, "create a context");
    spvsg_diagnostic_t *diag = NULL;

    /* 1. The input uses operations Vulkan 1.1 lacks: the target-fit rule reports them. */
    spvsg_report_t *report = NULL;
    spvsg_result_t r = spvsg_validate(ctx, words, count, &report, &diag);
    CHECK(r == SPVSG_FINDINGS && report != NULL && diag == NULL, "the input does not fit vulkan1.1");
    print_findings(report);
    int target_findings = 0;
    const spvsg_finding_t *f = spvsg_report_findings(report);
    for (size_t i = 0; i < spvsg_report_count(report); i++) {
        target_findings += strcmp(f[i].code, "SG0701") == 0;
    }
    CHECK(target_findings > 0, "SG0701 (target lacks a feature) among the findings");
    spvsg_report_destroy(report);

    /* 2. Lower it, then validate the result: nothing at error level is left. */
    spvsg_binary_t *lowered = NULL;
    r = spvsg_lower(ctx, words, count, &lowered, &diag);
    if (r != SPVSG_SUCCESS) {
        fprintf(stderr, "lower: %s: %s\n", spvsg_result_string(r), diag ? diag->message : "");
        spvsg_diagnostic_destroy(diag);
        return 1;
    }
    CHECK(lowered->changed && lowered->rewritten > 0, "the module was rewritten");
    r = spvsg_validate(ctx, lowered->code, lowered->word_count, &report, &diag);
    print_findings(report);
    CHECK(r == SPVSG_SUCCESS, "the lowered module fits vulkan1.1");
    spvsg_report_destroy(report);
    printf("lowered %zu instructions: %zu words in, %zu words out\n", lowered->rewritten, count,
           lowered->word_count);

    FILE *out = fopen(argv[2], "wb");
    CHECK(out != NULL, "open the output file");
    CHECK(fwrite(lowered->code, 4, lowered->word_count, out) == lowered->word_count, "write the output");
    CHECK(fclose(out) == 0, "close the output");
    spvsg_binary_destroy(lowered);

    /* 3. Errors come back as codes with a diagnostic. */
    r = spvsg_context_set_target(ctx, "no-such-gpu", &diag);
    CHECK(r == SPVSG_ERROR_INVALID_ARGUMENT && diag && strstr(diag->message, "no-such-gpu"),
          "an unknown target is refused and named");
    spvsg_diagnostic_destroy(diag);
    r = spvsg_lower(ctx, words, count / 2, &lowered, &diag);
    CHECK(r == SPVSG_ERROR_INVALID_BINARY && lowered == NULL && diag && diag->code == r,
          "a truncated module is refused");
    printf("truncated input: %s\n", diag->message);
    spvsg_diagnostic_destroy(diag);
    r = spvsg_validate(ctx, NULL, count, &report, &diag);
    CHECK(r == SPVSG_ERROR_NULL_POINTER && report == NULL, "NULL words are refused");
    spvsg_diagnostic_destroy(diag);

    /* 4. A device with native partitioned and vote ops needs nothing rewritten. */
    CHECK(spvsg_context_set_target(ctx, "nvidia", NULL) == SPVSG_SUCCESS, "select the nvidia preset");
    CHECK(spvsg_context_set_subgroup_size(ctx, 64, &diag) == SPVSG_ERROR_INVALID_ARGUMENT,
          "nvidia runs subgroups of 32 only");
    spvsg_diagnostic_destroy(diag);
    r = spvsg_lower(ctx, words, count, &lowered, NULL);
    CHECK(r == SPVSG_SUCCESS && !lowered->changed && lowered->word_count == count &&
              memcmp(lowered->code, words, count * 4) == 0,
          "the nvidia preset keeps the module as it is");
    spvsg_binary_destroy(lowered);

    spvsg_context_destroy(ctx);
    free(words);
    printf("ok: spv-subgroup %s\n", spvsg_version());
    return 0;
}
