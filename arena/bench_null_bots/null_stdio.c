/* The bench's null bot over stdio (`python -m arena.bench harness`): as cheap as a bot
 * can be, so that what the bench measures is the harness.
 *
 * It never asks for the legal moves. In a "main" decision it advances (always legal);
 * in a "special" decision it places the 1x1 patch on the first empty cell of its quilt
 * (row-major). It reads only "type", "seq", "decision", "to_move" and "quilts", with
 * plain string scans (the referee writes compact JSON, one message per line).
 *
 * Usage: null_stdio [STATS_DIR LABEL]. With STATS_DIR it keeps, in memory, the
 * CLOCK_MONOTONIC time (ns) at which each new_game, each game's first move_request and
 * each game_over arrived, and at exit (shutdown or EOF) writes them to
 * STATS_DIR/LABEL-PID.txt with the number of moves and its own CPU time (getrusage).
 * Lines: "N t", "R t", "O t", "moves n", "cpu_ns n". When it cannot write there (the
 * strict sandbox hides the folder) it writes one line "arena-bench-stats moves n cpu_ns n"
 * to stderr instead, which the harness keeps in the bot's log.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static char *events = NULL;  /* one kind byte per event */
static long long *stamps = NULL;
static size_t count = 0, room = 0;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void note(char kind, long long t) {
    if (count == room) {
        room = room ? room * 2 : 4096;
        events = realloc(events, room);
        stamps = realloc(stamps, room * sizeof *stamps);
        if (!events || !stamps) exit(3);
    }
    events[count] = kind;
    stamps[count++] = t;
}

/* The first empty cell ('.') of the seat's quilt, as "[r,c]" in out; 0 if none. */
static int first_empty(const char *msg, int seat, char *out, size_t size) {
    const char *p = strstr(msg, "\"quilts\":[");
    if (!p) return 0;
    p += 10;
    /* p is at '[' of seat 0's quilt; skip one whole quilt for seat 1 */
    if (seat == 1) {
        p = strchr(p, ']');
        if (!p) return 0;
        p = strchr(p, '[');
        if (!p) return 0;
    }
    int row = -1, col = 0, in_string = 0;
    for (p++; *p && *p != ']'; p++) {
        if (*p == '"') {
            in_string = !in_string;
            if (in_string) { row++; col = 0; }
        } else if (in_string) {
            if (*p == '.') {
                snprintf(out, size, "[%d,%d]", row, col);
                return 1;
            }
            col++;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    char *line = NULL;
    size_t cap = 0;
    long moves = 0;
    int awaiting_first = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("{\"type\":\"hello\",\"name\":\"null-stdio\",\"version\":\"1\",\"protocol\":1}\n");
    while (getline(&line, &cap, stdin) > 0) {
        long long t = now_ns();
        if (strstr(line, "\"type\":\"move_request\"")) {
            if (awaiting_first) { note('R', t); awaiting_first = 0; }
            const char *seq = strstr(line, "\"seq\":");
            if (!seq) continue;
            long n = strtol(seq + 6, NULL, 10);
            char cell[32];
            const char *to_move = strstr(line, "\"to_move\":");
            int seat = to_move ? atoi(to_move + 10) : 0;
            moves++;
            if (strstr(line, "\"decision\":\"special\"") && first_empty(line, seat, cell, sizeof cell))
                printf("{\"type\":\"move\",\"seq\":%ld,\"move\":{\"action\":\"special\",\"cells\":[%s]}}\n",
                       n, cell);
            else
                printf("{\"type\":\"move\",\"seq\":%ld,\"move\":{\"action\":\"advance\"}}\n", n);
        } else if (strstr(line, "\"type\":\"new_game\"")) {
            note('N', t);
            awaiting_first = 1;
        } else if (strstr(line, "\"type\":\"game_over\"")) {
            note('O', t);
            awaiting_first = 0;
        } else if (strstr(line, "\"type\":\"shutdown\"")) {
            break;
        }
    }
    free(line);
    if (argc >= 3) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s-%ld.txt", argv[1], argv[2], (long)getpid());
        FILE *out = fopen(path, "w");
        struct rusage self;
        getrusage(RUSAGE_SELF, &self);
        long long cpu = (long long)(self.ru_utime.tv_sec + self.ru_stime.tv_sec) * 1000000000LL
                        + (long long)(self.ru_utime.tv_usec + self.ru_stime.tv_usec) * 1000LL;
        if (out) {
            for (size_t i = 0; i < count; i++) fprintf(out, "%c %lld\n", events[i], stamps[i]);
            fprintf(out, "moves %ld\ncpu_ns %lld\n", moves, cpu);
            fclose(out);
        } else {  /* under the strict sandbox its folder is not there: its log (stderr) instead */
            fprintf(stderr, "arena-bench-stats moves %ld cpu_ns %lld\n", moves, cpu);
        }
    }
    return 0;
}
