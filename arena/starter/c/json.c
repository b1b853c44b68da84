/* json.c: see json.h (no copyright claimed; 0BSD terms). */
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *p;
    int depth;
} reader;

#define MAX_DEPTH 64

static json *parse_value(reader *r);

static void skip_blanks(reader *r) {
    while (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r') r->p++;
}

static json *new_value(json_kind kind) {
    json *value = calloc(1, sizeof *value);
    if (value) value->kind = kind;
    return value;
}

static int add_item(json *container, json *item) {
    json **items = realloc(container->items, (container->count + 1) * sizeof *items);
    if (!items) return 0;
    container->items = items;
    container->items[container->count++] = item;
    return 1;
}

static int hex4(const char *p, unsigned *out) {
    unsigned value = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        value <<= 4;
        if (c >= '0' && c <= '9') value |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') value |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') value |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = value;
    return 1;
}

/* A string at r->p (its opening quote), unescaped into a new buffer. */
static char *parse_string(reader *r) {
    const char *p = r->p + 1;
    size_t cap = 16, len = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    while (*p != '"') {
        unsigned code;
        if (*p == '\0' || (unsigned char)*p < 0x20) goto fail;
        if (len + 5 > cap) {
            char *bigger = realloc(out, cap *= 2);
            if (!bigger) goto fail;
            out = bigger;
        }
        if (*p != '\\') {
            out[len++] = *p++;
            continue;
        }
        p++;
        switch (*p++) {
            case '"': out[len++] = '"'; break;
            case '\\': out[len++] = '\\'; break;
            case '/': out[len++] = '/'; break;
            case 'b': out[len++] = '\b'; break;
            case 'f': out[len++] = '\f'; break;
            case 'n': out[len++] = '\n'; break;
            case 'r': out[len++] = '\r'; break;
            case 't': out[len++] = '\t'; break;
            case 'u':
                if (!hex4(p, &code)) goto fail;
                p += 4;
                if (code >= 0xD800 && code < 0xDC00 && p[0] == '\\' && p[1] == 'u') {
                    unsigned low;
                    if (hex4(p + 2, &low) && low >= 0xDC00 && low < 0xE000) {
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                        p += 6;
                    }
                }
                if (code < 0x80) out[len++] = (char)code;
                else if (code < 0x800) {
                    out[len++] = (char)(0xC0 | (code >> 6));
                    out[len++] = (char)(0x80 | (code & 0x3F));
                } else if (code < 0x10000) {
                    out[len++] = (char)(0xE0 | (code >> 12));
                    out[len++] = (char)(0x80 | ((code >> 6) & 0x3F));
                    out[len++] = (char)(0x80 | (code & 0x3F));
                } else {
                    out[len++] = (char)(0xF0 | (code >> 18));
                    out[len++] = (char)(0x80 | ((code >> 12) & 0x3F));
                    out[len++] = (char)(0x80 | ((code >> 6) & 0x3F));
                    out[len++] = (char)(0x80 | (code & 0x3F));
                }
                break;
            default: goto fail;
        }
    }
    out[len] = '\0';
    r->p = p + 1;
    return out;
fail:
    free(out);
    return NULL;
}

static json *parse_container(reader *r, json_kind kind, char close) {
    json *container = new_value(kind);
    if (!container || ++r->depth > MAX_DEPTH) goto fail;
    r->p++;
    skip_blanks(r);
    if (*r->p == close) {
        r->p++;
        r->depth--;
        return container;
    }
    for (;;) {
        char *key = NULL;
        skip_blanks(r);
        if (kind == JSON_OBJECT) {
            if (*r->p != '"' || !(key = parse_string(r))) goto fail;
            skip_blanks(r);
            if (*r->p != ':') {
                free(key);
                goto fail;
            }
            r->p++;
        }
        json *item = parse_value(r);
        if (!item || !add_item(container, item)) {
            free(key);
            json_free(item);
            goto fail;
        }
        item->key = key;
        skip_blanks(r);
        if (*r->p == ',') {
            r->p++;
            continue;
        }
        if (*r->p != close) goto fail;
        r->p++;
        r->depth--;
        return container;
    }
fail:
    json_free(container);
    return NULL;
}

static json *parse_value(reader *r) {
    skip_blanks(r);
    const char *p = r->p;
    if (*p == '{') return parse_container(r, JSON_OBJECT, '}');
    if (*p == '[') return parse_container(r, JSON_ARRAY, ']');
    if (*p == '"') {
        json *value = new_value(JSON_STRING);
        if (value && !(value->string = parse_string(r))) {
            free(value);
            return NULL;
        }
        return value;
    }
    if (strncmp(p, "true", 4) == 0) { r->p += 4; return new_value(JSON_TRUE); }
    if (strncmp(p, "false", 5) == 0) { r->p += 5; return new_value(JSON_FALSE); }
    if (strncmp(p, "null", 4) == 0) { r->p += 4; return new_value(JSON_NULL); }
    if (*p == '-' || (*p >= '0' && *p <= '9')) {
        char *end;
        double number = strtod(p, &end);
        if (end == p) return NULL;
        json *value = new_value(JSON_NUMBER);
        if (value) value->number = number;
        r->p = end;
        return value;
    }
    return NULL;
}

json *json_parse(const char *text) {
    reader r = {text, 0};
    json *value = parse_value(&r);
    if (!value) return NULL;
    skip_blanks(&r);
    if (*r.p != '\0') { /* something after the value */
        json_free(value);
        return NULL;
    }
    return value;
}

void json_free(json *value) {
    if (!value) return;
    for (size_t i = 0; i < value->count; i++) json_free(value->items[i]);
    free(value->items);
    free(value->string);
    free(value->key);
    free(value);
}

json *json_get(const json *object, const char *key) {
    if (!object || object->kind != JSON_OBJECT) return NULL;
    for (size_t i = 0; i < object->count; i++)
        if (strcmp(object->items[i]->key, key) == 0) return object->items[i];
    return NULL;
}

json *json_at(const json *array, size_t index) {
    return array && array->kind == JSON_ARRAY && index < array->count ? array->items[index] : NULL;
}

size_t json_len(const json *value) {
    return value && (value->kind == JSON_ARRAY || value->kind == JSON_OBJECT) ? value->count : 0;
}

double json_num(const json *value) { return value && value->kind == JSON_NUMBER ? value->number : 0; }

const char *json_str(const json *value) { return value && value->kind == JSON_STRING ? value->string : ""; }

int json_is(const json *value, const char *string) {
    return value && value->kind == JSON_STRING && strcmp(value->string, string) == 0;
}

typedef struct {
    char *out;
    size_t size, len;
} writer;

static void put(writer *w, const char *text, size_t n) {
    for (size_t i = 0; i < n; i++, w->len++)
        if (w->len + 1 < w->size) w->out[w->len] = text[i];
}

static void put_string(writer *w, const char *s) {
    put(w, "\"", 1);
    for (; *s; s++) {
        char escaped[8];
        if (*s == '"' || *s == '\\') {
            escaped[0] = '\\';
            escaped[1] = *s;
            put(w, escaped, 2);
        } else if ((unsigned char)*s < 0x20) {
            snprintf(escaped, sizeof escaped, "\\u%04x", (unsigned char)*s);
            put(w, escaped, 6);
        } else put(w, s, 1);
    }
    put(w, "\"", 1);
}

static void write_value(writer *w, const json *value) {
    char number[32];
    switch (value->kind) {
        case JSON_NULL: put(w, "null", 4); break;
        case JSON_FALSE: put(w, "false", 5); break;
        case JSON_TRUE: put(w, "true", 4); break;
        case JSON_NUMBER: put(w, number, (size_t)snprintf(number, sizeof number, "%.17g", value->number)); break;
        case JSON_STRING: put_string(w, value->string); break;
        case JSON_ARRAY:
        case JSON_OBJECT:
            put(w, value->kind == JSON_ARRAY ? "[" : "{", 1);
            for (size_t i = 0; i < value->count; i++) {
                if (i) put(w, ",", 1);
                if (value->kind == JSON_OBJECT) {
                    put_string(w, value->items[i]->key);
                    put(w, ":", 1);
                }
                write_value(w, value->items[i]);
            }
            put(w, value->kind == JSON_ARRAY ? "]" : "}", 1);
            break;
    }
}

size_t json_write(const json *value, char *out, size_t size) {
    writer w = {out, size, 0};
    if (value) write_value(&w, value);
    if (size) out[w.len < size ? w.len : size - 1] = '\0';
    return w.len;
}
