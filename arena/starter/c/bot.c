/* A Patchwork bot for patchwork-arena, in C (C99 + POSIX), over stdio (JSON lines).
 *
 * The protocol is in protocol/PROTOCOL.md of the patchwork-arena repository (section 2
 * for stdio, section 5 for every message). This bot needs no JSON library and no move
 * generator: its hello asks the referee for the legal moves, and each answer copies one
 * of them verbatim. The small scanner below finds a top-level field of a message; use a
 * real JSON library (cJSON, jansson...) once your bot reads the state.
 *
 * Rules of the road: one JSON message per line on stdout, flushed at once (stdout to a
 * pipe is fully buffered in C: fflush, or line buffering as below); log to stderr (the
 * arena keeps it in the bot's log); play games until "shutdown": one process plays many.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NAME "@NAME@"

/* The end of the JSON value that starts at p (after blanks), or NULL if malformed. */
static const char *skip_value(const char *p) {
    int depth = 0, in_string = 0;
    while (*p == ' ' || *p == '\t') p++;
    for (; *p; p++) {
        if (in_string) {
            if (*p == '\\' && p[1]) p++;
            else if (*p == '"') {
                in_string = 0;
                if (depth == 0) return p + 1;
            }
        } else if (*p == '"') in_string = 1;
        else if (*p == '{' || *p == '[') depth++;
        else if (*p == '}' || *p == ']') {
            if (depth == 0) return p; /* end of the enclosing container */
            if (--depth == 0) return p + 1;
        } else if (depth == 0 && (*p == ',' || *p == ' ' || *p == '\r' || *p == '\n')) return p;
    }
    return depth == 0 && !in_string ? p : NULL;
}

/* The value of the top-level field "key" of the object in msg (its length in *len). */
static const char *field(const char *msg, const char *key, size_t *len) {
    size_t key_len = strlen(key);
    const char *p = strchr(msg, '{');
    if (!p) return NULL;
    p++;
    for (;;) {
        while (*p == ' ' || *p == ',' || *p == '\t') p++;
        if (*p != '"') return NULL;
        const char *name = p + 1;
        const char *name_end = skip_value(p);
        if (!name_end) return NULL;
        p = name_end;
        while (*p == ' ' || *p == ':') p++;
        const char *end = skip_value(p);
        if (!end) return NULL;
        if ((size_t)(name_end - 1 - name) == key_len && strncmp(name, key, key_len) == 0) {
            *len = (size_t)(end - p);
            return p;
        }
        p = end;
    }
}

/* Whether the top-level field "type" of msg is the string type. */
static int is_type(const char *msg, const char *type) {
    size_t len = 0;
    const char *value = field(msg, "type", &len);
    return value && len == strlen(type) + 2 && strncmp(value + 1, type, len - 2) == 0;
}

/* Your strategy goes here: the request's "state" is the position (PROTOCOL.md section 4)
 * and "legal_moves" every legal move. This one plays a random legal move; the result
 * points into request (its length in *len). */
static const char *choose_move(const char *request, size_t *len) {
    size_t list_len = 0;
    const char *list = field(request, "legal_moves", &list_len);
    const char *moves[2048];
    size_t lengths[2048];
    int count = 0;
    if (!list || *list != '[') return NULL;
    const char *p = list + 1;
    while (count < 2048) {
        while (*p == ' ' || *p == ',') p++;
        if (*p != '{') break;
        const char *end = skip_value(p);
        if (!end) break;
        moves[count] = p;
        lengths[count++] = (size_t)(end - p);
        p = end;
    }
    if (count == 0) return NULL;
    int pick = rand() % count;
    *len = lengths[pick];
    return moves[pick];
}

int main(void) {
    char *line = NULL;
    size_t cap = 0;
    setvbuf(stdout, NULL, _IOLBF, 0); /* every line is sent at once */
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    printf("{\"type\":\"hello\",\"name\":\"%s\",\"version\":\"0.1\",\"protocol\":1,"
           "\"capabilities\":{\"legal_moves\":true}}\n", NAME);
    while (getline(&line, &cap, stdin) > 0) { /* end of input: the referee is gone */
        if (is_type(line, "move_request")) {
            size_t seq_len = 0, move_len = 0;
            const char *seq = field(line, "seq", &seq_len);
            const char *move = choose_move(line, &move_len);
            if (!seq || !move) {
                printf("{\"type\":\"error\",\"message\":\"cannot read this move_request\"}\n");
                break;
            }
            printf("{\"type\":\"move\",\"seq\":%.*s,\"move\":%.*s}\n", (int)seq_len, seq,
                   (int)move_len, move);
        } else if (is_type(line, "shutdown")) {
            break;
        } else if (is_type(line, "new_game") || is_type(line, "game_over") || is_type(line, "error")) {
            size_t len = strlen(line);
            fprintf(stderr, "%.*s%s", (int)(len > 300 ? 300 : len), line, len > 300 ? "...\n" : "");
        } /* welcome, and types added by later versions: nothing to do */
    }
    free(line);
    return 0;
}
