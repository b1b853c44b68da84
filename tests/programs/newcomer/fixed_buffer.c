/* Reads each message into a fixed 4096-byte buffer and plays the last legal move: a
   move_request with its legal moves is longer, so fgets returns its first 4096 bytes, strstr
   finds no "}]}" (the end of the list) in them, and the bot dies by SIGSEGV (it reads NULL - 1). With the argument "beside" it also
   opens a log file next to itself, without checking: NULL under --sandbox strict, where
   the bot's folder is read-only, and fprintf(NULL, ...) crashes before the hello. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    char line[4096];
    if (argc > 1 && strcmp(argv[1], "beside") == 0) {
        FILE *log = fopen("bot.log", "w");
        fprintf(log, "starting\n");
        fclose(log);
    }
    printf("{\"type\":\"hello\",\"name\":\"fixed-buffer\",\"version\":\"1\",\"protocol\":1,"
           "\"capabilities\":{\"legal_moves\":true}}\n");
    fflush(stdout);
    while (fgets(line, sizeof line, stdin)) {
        if (strstr(line, "\"shutdown\"")) break;
        if (!strstr(line, "\"move_request\"")) continue;
        int seq = atoi(strstr(line, "\"seq\":") + 6);
        char *end = strstr(line, "}]}");  /* the last move ends the list, and the message */
        char *last = end;
        while (*last != '{') last--;
        printf("{\"type\":\"move\",\"seq\":%d,\"move\":%.*s}\n", seq, (int)(end - last + 1), last);
        fflush(stdout);
    }
    return 0;
}
