/* A Patchwork bot for patchwork-arena, in C (C99 + POSIX), over stdio (JSON lines).
 *
 * The protocol is in protocol/PROTOCOL.md of the patchwork-arena repository (section 2
 * for stdio, section 5 for every message). This bot needs no move generator: its hello asks
 * the referee for the legal moves, and it answers with one of them. Each message is read
 * whole (getline: a move_request with its legal moves can pass 80 KB) and parsed by json.c,
 * the small parser beside this file (yours to keep or change). A strict build sees only the
 * host's packages: a JSON library of your own choice goes in the bot folder (copy cJSON.c and
 * cJSON.h here, add cJSON.c to the build line), see docs/compiled-bots.md.
 *
 * Rules of the road: one JSON message per line on stdout, flushed at once (stdout to a
 * pipe is fully buffered in C: fflush, or line buffering as below); log to stderr (the
 * arena keeps it in the bot's log); play games until "shutdown": one process plays many;
 * ignore the message types you do not handle (welcome, and those of later versions).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "json.h"

#define NAME "@NAME@"
#define MAX_PATCHES 256

/* Each patch's costs and income, by id, from new_game's components. */
static struct { int known, buttons_cost, time_cost, income; } patches[MAX_PATCHES];
static int final_space = 53;

static void read_components(const json *new_game) {
    const json *components = json_get(new_game, "components");
    const json *list = json_get(components, "patches");
    final_space = (int)json_num(json_get(json_get(components, "time_board"), "final_space"));
    memset(patches, 0, sizeof patches);
    for (size_t i = 0; i < json_len(list); i++) {
        const json *patch = json_at(list, i);
        int id = (int)json_num(json_get(patch, "id"));
        if (id < 0 || id >= MAX_PATCHES) continue;
        patches[id].known = 1;
        patches[id].buttons_cost = (int)json_num(json_get(patch, "buttons_cost"));
        patches[id].time_cost = (int)json_num(json_get(patch, "time_cost"));
        patches[id].income = (int)json_num(json_get(patch, "income"));
    }
}

/* Your strategy goes here: the request's "state" is the position (PROTOCOL.md section 4)
 * and "legal_moves" every legal move. This one values a purchase by the cells it covers and
 * the income it will pay over the rest of the game, less its price in buttons, per space
 * of time it costs; it keeps a few buttons in hand, and advances when nothing is worth
 * more (a random choice among equals). */
static const json *choose_move(const json *request) {
    const json *state = json_get(request, "state");
    const json *moves = json_get(request, "legal_moves");
    int seat = (int)json_num(json_get(state, "to_move"));
    int buttons = (int)json_num(json_at(json_get(state, "buttons"), (size_t)seat));
    int position = (int)json_num(json_at(json_get(state, "positions"), (size_t)seat));
    double incomes_left = (final_space - position) / 6.0; /* income is paid about every 6 spaces */
    const json *best = NULL;
    double best_value = -1e9;
    int ties = 0;
    for (size_t i = 0; i < json_len(moves); i++) {
        const json *move = json_at(moves, i);
        double value = 0; /* advance, and a special patch's placement */
        if (json_is(json_get(move, "action"), "buy")) {
            int id = (int)json_num(json_get(move, "patch"));
            if (id < 0 || id >= MAX_PATCHES || !patches[id].known) continue;
            double cells = (double)json_len(json_get(move, "cells"));
            double gain = 2 * cells + patches[id].income * incomes_left - patches[id].buttons_cost;
            value = gain / (patches[id].time_cost > 0 ? patches[id].time_cost : 1);
            if (buttons - patches[id].buttons_cost < 2) value -= 1; /* keep a few buttons */
        }
        if (value > best_value) {
            best = move;
            best_value = value;
            ties = 1;
        } else if (value == best_value && rand() % ++ties == 0) {
            best = move;
        }
    }
    return best;
}

int main(void) {
    char *line = NULL;
    size_t cap = 0;
    char *move_text = NULL;
    size_t move_cap = 0;
    setvbuf(stdout, NULL, _IOLBF, 0); /* every line is sent at once */
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    printf("{\"type\":\"hello\",\"name\":\"%s\",\"version\":\"0.2\",\"protocol\":1,"
           "\"capabilities\":{\"legal_moves\":true}}\n", NAME);
    while (getline(&line, &cap, stdin) > 0) { /* the whole line, however long; end: the referee is gone */
        json *message = json_parse(line);
        const json *type = json_get(message, "type");
        if (!message) {
            fprintf(stderr, "not JSON: %.200s\n", line);
        } else if (json_is(type, "move_request")) {
            const json *move = choose_move(message);
            if (!move) {
                printf("{\"type\":\"error\",\"message\":\"no move to choose in this move_request\"}\n");
                json_free(message);
                break;
            }
            size_t need = json_write(move, NULL, 0) + 1;
            if (need > move_cap) {
                free(move_text);
                move_text = malloc(move_cap = need);
                if (!move_text) return 1;
            }
            json_write(move, move_text, move_cap);
            printf("{\"type\":\"move\",\"seq\":%.0f,\"move\":%s}\n", json_num(json_get(message, "seq")),
                   move_text);
        } else if (json_is(type, "new_game")) {
            read_components(message);
            fprintf(stderr, "new game %s, seat %.0f\n", json_str(json_get(message, "game_id")),
                    json_num(json_get(message, "seat")));
        } else if (json_is(type, "game_over") || json_is(type, "error")) {
            size_t len = strlen(line);
            fprintf(stderr, "%.*s%s", (int)(len > 300 ? 300 : len), line, len > 300 ? "...\n" : "");
        } else if (json_is(type, "shutdown")) {
            json_free(message);
            break;
        } /* welcome, and types added by later versions: nothing to do */
        json_free(message);
    }
    free(move_text);
    free(line);
    return 0;
}
