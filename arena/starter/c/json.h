/* json.h: a small JSON parser for a patchwork-arena bot (C99), written for the starter kit.
 *
 * Written for patchwork-arena's C starter kit; no copyright is claimed: copy, change and ship
 * it with your bot as you like (0BSD terms: no conditions, no warranty).
 *
 * json_parse reads one whole message into a tree; free it with json_free. Lookups never
 * fail: a missing field or a value of another kind gives NULL, 0 or "" (json_num of NULL
 * is 0), so a chain such as json_num(json_at(json_get(state, "buttons"), seat)) is safe.
 * Strings are unescaped (\uXXXX as UTF-8); numbers are doubles (every protocol number is
 * an integer well within a double's exact range).
 */
#ifndef ARENA_JSON_H
#define ARENA_JSON_H

#include <stddef.h>

typedef enum { JSON_NULL, JSON_FALSE, JSON_TRUE, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_kind;

typedef struct json json;
struct json {
    json_kind kind;
    double number;   /* JSON_NUMBER */
    char *string;    /* JSON_STRING: the text; in an object's member: its key */
    char *key;       /* the member's name, for a value inside an object */
    json **items;    /* JSON_ARRAY, JSON_OBJECT: the elements or members, in order */
    size_t count;
};

/* The tree of text (one JSON value, blanks around it allowed), or NULL if it is not JSON. */
json *json_parse(const char *text);
void json_free(json *value);

json *json_get(const json *object, const char *key); /* a member of an object, or NULL */
json *json_at(const json *array, size_t index);      /* an element of an array, or NULL */
size_t json_len(const json *value);                  /* elements or members; 0 otherwise */
double json_num(const json *value);                  /* a number, or 0 */
const char *json_str(const json *value);             /* a string, or "" */
int json_is(const json *value, const char *string);  /* whether it is that string */

/* Writes value as compact JSON into out (at most size bytes, always terminated); returns the
 * length the whole text needs, as snprintf does (to copy a legal move into a reply). */
size_t json_write(const json *value, char *out, size_t size);

#endif
