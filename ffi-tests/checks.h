/* The checks of the C programs of ffi-tests/ (C99), for those that include
 * it: a failing check prints the file, the line, the condition and a
 * message, and exits 1. */
#ifndef KP_FFI_TESTS_CHECKS_H
#define KP_FFI_TESTS_CHECKS_H

#include "kernpack.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond, ...)                                                           \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "FAIL %s:%d: check `%s`: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                          \
            fprintf(stderr, "\n");                                                 \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

/* The call succeeds and leaves an empty message. */
#define EXPECT_OK(call)                                                                  \
    do {                                                                                 \
        kp_status s_ = (call);                                                           \
        CHECK(s_ == KP_OK, "%s returned %d: \"%s\"", #call, (int)s_, kp_last_error_message()); \
        CHECK(kp_last_error_message()[0] == '\0', "a success left the message \"%s\"",   \
              kp_last_error_message());                                                  \
    } while (0)

/* `name` occurs in `msg` as a whole word. */
static inline int names_argument(const char *msg, const char *name)
{
    size_t n = strlen(name);
    const char *p = msg;
    while ((p = strstr(p, name)) != NULL) {
        int before = p == msg || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
        int after = !(isalnum((unsigned char)p[n]) || p[n] == '_');
        if (before && after)
            return 1;
        p++;
    }
    return 0;
}

/* The call fails with `want` and a message naming `arg`. */
#define EXPECT_ERR(call, want, arg)                                                       \
    do {                                                                                  \
        kp_status s_ = (call);                                                            \
        const char *m_ = kp_last_error_message();                                         \
        CHECK(s_ == (want), "%s returned %d, expected %d: \"%s\"", #call, (int)s_,         \
              (int)(want), m_);                                                           \
        CHECK(m_[0] != '\0', "%s failed with an empty message", #call);                   \
        CHECK(names_argument(m_, arg), "%s: \"%s\" does not name `%s`", #call, m_, arg);   \
    } while (0)

/* A linear congruential generator: the next value of `*state`, as a
 * uniform double in [0, 1). */
static inline double lcg_uniform(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*state >> 11) / 9007199254740992.0;
}

/* A CPU context and an AUTO one (destroy both); returns whether the AUTO
 * context runs on the GPU, and says so on stdout. Without a GPU,
 * KERNPACK_REQUIRE_GPU=1 fails. */
static inline int open_contexts(kp_context **cpu, kp_context **autoctx)
{
    int32_t is_gpu = 0;
    const char *require = getenv("KERNPACK_REQUIRE_GPU");
    EXPECT_OK(kp_context_create(KP_BACKEND_CPU, cpu));
    EXPECT_OK(kp_context_create(KP_BACKEND_AUTO, autoctx));
    EXPECT_OK(kp_context_is_gpu(*autoctx, &is_gpu));
    printf("     AUTO context runs on the %s\n", is_gpu ? "GPU" : "CPU");
    CHECK(is_gpu || !(require && strcmp(require, "1") == 0),
          "KERNPACK_REQUIRE_GPU=1 but the AUTO context has no GPU");
    return is_gpu != 0;
}

/* Destroys the contexts of open_contexts() and says that every check
 * passed; returns 0, the exit status. */
static inline int close_contexts(kp_context *cpu, kp_context *autoctx, int is_gpu)
{
    kp_context_destroy(autoctx);
    kp_context_destroy(cpu);
    printf("all checks passed (C, %s)\n", is_gpu ? "GPU" : "CPU");
    return 0;
}

#endif
