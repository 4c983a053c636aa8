/* check.h: the assertion macros of the C tests. A test program runs its checks, prints
 * one line per failure with file and line, and exits 1 if any failed (77: skipped). */
#ifndef BNN_CHECK_H
#define BNN_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                              \
    do {                                                                         \
        check_count++;                                                           \
        if (!(cond)) {                                                           \
            check_failures++;                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                        \
    } while (0)

#define CHECK_MSG(cond, ...)                                                     \
    do {                                                                         \
        check_count++;                                                           \
        if (!(cond)) {                                                           \
            check_failures++;                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                        \
            fprintf(stderr, "\n");                                               \
        }                                                                        \
    } while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                          \
    CHECK_MSG(strstr((hay), (needle)) != NULL, "'%s' does not contain '%s'", (hay), (needle))

/* Returns the exit status for main(). */
static inline int check_report(const char *name) {
    if (check_failures)
        fprintf(stderr, "%s: %d of %d checks failed\n", name, check_failures, check_count);
    else
        printf("%s: %d checks passed\n", name, check_count);
    return check_failures ? 1 : 0;
}

#endif
