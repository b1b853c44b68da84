/* A ZeroMQ bot in C with libzmq (tests/channel/test_zmq_stacks.py): hello, then the first
   legal move of each request, found in the text (the referee's JSON is compact). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

static const char HELLO[] = "{\"type\":\"hello\",\"name\":\"c-libzmq\",\"version\":\"0.1\",\"protocol\":1,"
                            "\"capabilities\":{\"legal_moves\":true}}";

int main(void) {
    const char *endpoint = getenv("ARENA_ENDPOINT"), *token = getenv("ARENA_TOKEN");
    void *ctx = zmq_ctx_new();
    void *sock = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(sock, ZMQ_ROUTING_ID, token, strlen(token));
    zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_connect(sock, endpoint) != 0) {
        fprintf(stderr, "connect: %s\n", zmq_strerror(zmq_errno()));
        return 3;
    }
    zmq_send(sock, HELLO, strlen(HELLO), 0);
    size_t cap = 2u << 20;
    char *in = malloc(cap + 1), *out = malloc(cap + 64);
    for (;;) {
        int n = zmq_recv(sock, in, cap, 0);
        if (n < 0) break;
        if ((size_t)n > cap) n = (int)cap;
        in[n] = 0;
        if (strstr(in, "\"type\":\"shutdown\"")) break;
        if (!strstr(in, "\"type\":\"move_request\"")) continue;
        long seq = strtol(strstr(in, "\"seq\":") + 6, NULL, 10);
        char *move = strchr(strstr(in, "\"legal_moves\":"), '{'), *end = move;
        int depth = 0;
        do {
            if (*end == '{') depth++;
            else if (*end == '}') depth--;
            end++;
        } while (depth);
        int len = sprintf(out, "{\"type\":\"move\",\"seq\":%ld,\"move\":", seq);
        memcpy(out + len, move, (size_t)(end - move));
        len += (int)(end - move);
        out[len++] = '}';
        zmq_send(sock, out, (size_t)len, 0);
    }
    zmq_close(sock);
    zmq_ctx_term(ctx);
    return 0;
}
