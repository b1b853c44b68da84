/* The bench's C pipe floor (`python -m arena.bench peer`, when no fastchess is given):
 * the referee side of a bare pipe loop, as cheap as a referee can be, against two null
 * bots (null_stdio). It sends requests built ahead by the bench (the same messages the
 * referee sends in the null bots' games), checks each reply's seq, and reads replies
 * buffered (getline on a FILE over the pipe): no engine, no clocks, no records.
 *
 * Usage: pipe_floor SCRIPT ROUNDS BOT. SCRIPT holds one message a line, each line a kind
 * ('N' new_game, 'R' move_request, 'O' game_over), a seat ('0' or '1') and the message's
 * JSON; a move_request's seq is written as 999999999, replaced by the seat's next seq.
 * Games are played from the script in turn, ROUNDS games in all. Prints
 * "moves N cpu_ns C": its own CPU (getrusage) over the loop, start-up excluded.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define PLACEHOLDER "999999999"

static int to_bot[2], from_fd[2];
static FILE *from_bot[2];
static char *reply = NULL;
static size_t reply_cap = 0;

static void put(int fd, const char *data, size_t size) {
    while (size > 0) {
        ssize_t n = write(fd, data, size);
        if (n <= 0) { perror("pipe_floor: write"); exit(2); }
        data += n;
        size -= (size_t)n;
    }
}

static void get(int seat) {
    if (getline(&reply, &reply_cap, from_bot[seat]) <= 0) {
        fprintf(stderr, "pipe_floor: bot %d closed its stdout\n", seat);
        exit(2);
    }
}

static long long cpu_ns(void) {
    struct rusage self;
    getrusage(RUSAGE_SELF, &self);
    return (long long)(self.ru_utime.tv_sec + self.ru_stime.tv_sec) * 1000000000LL
           + (long long)(self.ru_utime.tv_usec + self.ru_stime.tv_usec) * 1000LL;
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: pipe_floor SCRIPT ROUNDS BOT\n"); return 2; }
    FILE *script = fopen(argv[1], "r");
    if (!script) { perror(argv[1]); return 2; }
    long rounds = strtol(argv[2], NULL, 10);
    /* the script in memory: lines, and where each game starts */
    char **lines = NULL;
    size_t nlines = 0, room = 0, *starts = NULL, ngames = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    while ((got = getline(&line, &cap, script)) > 0) {
        if (nlines == room) {
            room = room ? room * 2 : 1024;
            lines = realloc(lines, room * sizeof *lines);
            starts = realloc(starts, (room + 1) * sizeof *starts);
            if (!lines || !starts) return 3;
        }
        if (line[0] == 'N' && (nlines == 0 || lines[nlines - 1][0] != 'N')) starts[ngames++] = nlines;
        lines[nlines++] = strdup(line);
    }
    fclose(script);
    if (ngames == 0) { fprintf(stderr, "pipe_floor: no games in %s\n", argv[1]); return 2; }
    starts[ngames] = nlines;
    for (int seat = 0; seat < 2; seat++) {
        int in[2], out[2];
        if (pipe(in) || pipe(out)) { perror("pipe"); return 2; }
        pid_t pid = fork();
        if (pid == 0) {
            dup2(in[0], 0);
            dup2(out[1], 1);
            close(in[0]); close(in[1]); close(out[0]); close(out[1]);
            execl(argv[3], argv[3], (char *)NULL);
            _exit(127);
        }
        close(in[0]);
        close(out[1]);
        to_bot[seat] = in[1];
        from_fd[seat] = out[0];
        from_bot[seat] = fdopen(out[0], "r");
        get(seat); /* hello */
        const char *welcome = "{\"type\":\"welcome\",\"protocol\":1,\"referee\":\"floor\"}\n";
        put(to_bot[seat], welcome, strlen(welcome));
    }
    long seqs[2] = {0, 0}, moves = 0;
    char message[1 << 16];
    long long started = cpu_ns();
    for (long round = 0; round < rounds; round++) {
        size_t game = (size_t)round % ngames;
        for (size_t i = starts[game]; i < starts[game + 1]; i++) {
            const char *text = lines[i];
            int seat = text[1] - '0';
            const char *json = text + 2;
            if (text[0] != 'R') {
                put(to_bot[seat], json, strlen(json));
                continue;
            }
            const char *hole = strstr(json, PLACEHOLDER);
            if (!hole) { fprintf(stderr, "pipe_floor: a request without its seq\n"); return 2; }
            int n = snprintf(message, sizeof message, "%.*s%ld%s", (int)(hole - json), json, ++seqs[seat],
                             hole + strlen(PLACEHOLDER));
            if (n <= 0 || (size_t)n >= sizeof message) { fprintf(stderr, "pipe_floor: request too long\n"); return 2; }
            put(to_bot[seat], message, (size_t)n);
            get(seat);
            const char *seq = strstr(reply, "\"seq\":");
            if (!seq || strtol(seq + 6, NULL, 10) != seqs[seat]) {
                fprintf(stderr, "pipe_floor: null bot answered %s", reply);
                return 2;
            }
            moves++;
        }
    }
    long long spent = cpu_ns() - started;
    for (int seat = 0; seat < 2; seat++) {
        const char *bye = "{\"type\":\"shutdown\"}\n";
        put(to_bot[seat], bye, strlen(bye));
        close(to_bot[seat]);
    }
    while (wait(NULL) > 0) {
    }
    printf("moves %ld cpu_ns %lld\n", moves, spent);
    return 0;
}
