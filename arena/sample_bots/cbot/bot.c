/* A Patchwork bot in plain C, speaking the arena protocol as JSON lines on stdio.
 *
 * It needs no JSON library and no move generator: its hello asks the referee for
 * the legal moves (capabilities.legal_moves), and each reply copies one of them
 * verbatim. It prefers the last legal move listed (a purchase when one is
 * possible; the referee lists advance first), which plays better than random.
 * Messages are one line each; the only fields read are "type" and "seq".
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *line = NULL;
static size_t cap = 0;

/* Copy the JSON value that starts at p (an object) into out; return its length. */
static size_t object_length(const char *p) {
    int depth = 0, in_string = 0;
    const char *q = p;
    for (; *q; q++) {
        if (in_string) {
            if (*q == '\\' && q[1]) q++;
            else if (*q == '"') in_string = 0;
        } else if (*q == '"') in_string = 1;
        else if (*q == '{' || *q == '[') depth++;
        else if (*q == '}' || *q == ']') {
            if (--depth == 0) return (size_t)(q - p + 1);
        }
    }
    return 0;
}

/* Find the last top-level object in the array that follows key; NULL if none. */
static const char *last_element(const char *msg, const char *key, size_t *len) {
    const char *p = strstr(msg, key);
    const char *last = NULL;
    if (!p) return NULL;
    p = strchr(p, '[');
    if (!p) return NULL;
    p++;
    while (*p) {
        while (*p == ' ' || *p == ',') p++;
        if (*p != '{') break;
        size_t n = object_length(p);
        if (n == 0) break;
        last = p;
        *len = n;
        p += n;
    }
    return last;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("{\"type\":\"hello\",\"name\":\"cbot\",\"version\":\"1.0\",\"protocol\":1,"
           "\"capabilities\":{\"legal_moves\":true}}\n");
    while (getline(&line, &cap, stdin) > 0) {
        if (strstr(line, "\"type\":\"shutdown\"")) break;
        if (!strstr(line, "\"type\":\"move_request\"")) continue;
        const char *seq = strstr(line, "\"seq\":");
        if (!seq) continue;
        long n = strtol(seq + 6, NULL, 10);
        size_t len = 0;
        const char *move = last_element(line, "\"legal_moves\":", &len);
        if (!move) {
            printf("{\"type\":\"move\",\"seq\":%ld,\"move\":{\"action\":\"advance\"}}\n", n);
            continue;
        }
        printf("{\"type\":\"move\",\"seq\":%ld,\"move\":%.*s,\"info\":\"C bot\"}\n", n, (int)len, move);
    }
    free(line);
    return 0;
}
