// json.hpp: a small JSON parser for a patchwork-arena bot (C++17), written for the starter kit.
//
// Written for patchwork-arena's C++ starter kit; no copyright is claimed: copy, change and
// ship it with your bot as you like (0BSD terms: no conditions, no warranty).
//
// Json::parse reads one whole message into a tree (std::nullopt if it is not JSON). Lookups
// never throw: a missing field, or a value of another kind, gives an empty Json (null), 0 or
// "", so request["state"]["buttons"][seat].num() is safe. Strings are unescaped (\uXXXX as
// UTF-8); numbers are doubles (every protocol number is an integer a double holds exactly).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

class Json {
public:
    enum class Kind { Null, False, True, Number, String, Array, Object };

    static std::optional<Json> parse(std::string_view text) {
        size_t i = 0;
        Json value;
        if (!value.read(text, i, 0)) return std::nullopt;
        skip(text, i);
        if (i != text.size()) return std::nullopt;  // something after the value
        return value;
    }

    Kind kind() const { return kind_; }
    bool is(std::string_view s) const { return kind_ == Kind::String && string_ == s; }
    double num() const { return kind_ == Kind::Number ? number_ : 0; }
    const std::string &str() const { static const std::string none; return kind_ == Kind::String ? string_ : none; }
    size_t size() const { return kind_ == Kind::Array || kind_ == Kind::Object ? items_.size() : 0; }

    const Json &operator[](std::string_view key) const {  // an object's member
        if (kind_ == Kind::Object)
            for (size_t i = 0; i < items_.size(); ++i)
                if (keys_[i] == key) return items_[i];
        return null();
    }
    const Json &operator[](size_t index) const {  // an array's element
        return kind_ == Kind::Array && index < items_.size() ? items_[index] : null();
    }
    const std::vector<Json> &items() const { return items_; }  // elements, or members' values

    std::string dump() const {  // compact JSON text (to copy a legal move into a reply)
        std::string out;
        write(out);
        return out;
    }

private:
    Kind kind_ = Kind::Null;
    double number_ = 0;
    std::string string_;
    std::vector<Json> items_;
    std::vector<std::string> keys_;  // an object's, one per item

    static const Json &null() { static const Json none; return none; }

    static void skip(std::string_view s, size_t &i) {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
    }

    static bool hex4(std::string_view s, size_t i, unsigned &out) {
        if (i + 4 > s.size()) return false;
        out = 0;
        for (size_t k = i; k < i + 4; ++k) {
            char c = s[k];
            out <<= 4;
            if (c >= '0' && c <= '9') out |= unsigned(c - '0');
            else if (c >= 'a' && c <= 'f') out |= unsigned(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') out |= unsigned(c - 'A' + 10);
            else return false;
        }
        return true;
    }

    static void utf8(std::string &out, unsigned code) {
        if (code < 0x80) out += char(code);
        else if (code < 0x800) out += {char(0xC0 | (code >> 6)), char(0x80 | (code & 0x3F))};
        else if (code < 0x10000)
            out += {char(0xE0 | (code >> 12)), char(0x80 | ((code >> 6) & 0x3F)), char(0x80 | (code & 0x3F))};
        else
            out += {char(0xF0 | (code >> 18)), char(0x80 | ((code >> 12) & 0x3F)),
                    char(0x80 | ((code >> 6) & 0x3F)), char(0x80 | (code & 0x3F))};
    }

    static bool read_string(std::string_view s, size_t &i, std::string &out) {
        ++i;  // the opening quote
        while (i < s.size() && s[i] != '"') {
            char c = s[i++];
            if (static_cast<unsigned char>(c) < 0x20) return false;
            if (c != '\\') { out += c; continue; }
            if (i >= s.size()) return false;
            unsigned code;
            switch (s[i++]) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u':
                    if (!hex4(s, i, code)) return false;
                    i += 4;
                    if (code >= 0xD800 && code < 0xDC00 && i + 1 < s.size() && s[i] == '\\' && s[i + 1] == 'u') {
                        unsigned low;
                        if (hex4(s, i + 2, low) && low >= 0xDC00 && low < 0xE000) {
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                            i += 6;
                        }
                    }
                    utf8(out, code);
                    break;
                default: return false;
            }
        }
        if (i >= s.size()) return false;
        ++i;  // the closing quote
        return true;
    }

    bool read(std::string_view s, size_t &i, int depth) {
        skip(s, i);
        if (i >= s.size() || depth > 64) return false;
        char c = s[i];
        if (c == '{' || c == '[') {
            kind_ = c == '{' ? Kind::Object : Kind::Array;
            char close = c == '{' ? '}' : ']';
            ++i;
            skip(s, i);
            if (i < s.size() && s[i] == close) { ++i; return true; }
            for (;;) {
                skip(s, i);
                if (kind_ == Kind::Object) {
                    std::string key;
                    if (i >= s.size() || s[i] != '"' || !read_string(s, i, key)) return false;
                    skip(s, i);
                    if (i >= s.size() || s[i] != ':') return false;
                    ++i;
                    keys_.push_back(std::move(key));
                }
                items_.emplace_back();
                if (!items_.back().read(s, i, depth + 1)) return false;
                skip(s, i);
                if (i < s.size() && s[i] == ',') { ++i; continue; }
                if (i < s.size() && s[i] == close) { ++i; return true; }
                return false;
            }
        }
        if (c == '"') { kind_ = Kind::String; return read_string(s, i, string_); }
        for (auto [word, kind] : {std::pair{"true", Kind::True}, {"false", Kind::False}, {"null", Kind::Null}}) {
            std::string_view w(word);
            if (s.substr(i, w.size()) == w) { kind_ = kind; i += w.size(); return true; }
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            std::string digits(s.substr(i, 32));
            char *end = nullptr;
            number_ = std::strtod(digits.c_str(), &end);
            if (end == digits.c_str()) return false;
            kind_ = Kind::Number;
            i += size_t(end - digits.c_str());
            return true;
        }
        return false;
    }

    static void write_string(std::string &out, const std::string &s) {
        out += '"';
        for (char c : s) {
            if (c == '"' || c == '\\') { out += '\\'; out += c; }
            else if (static_cast<unsigned char>(c) < 0x20) {
                char escaped[8];
                std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned char>(c));
                out += escaped;
            } else out += c;
        }
        out += '"';
    }

    void write(std::string &out) const {
        char number[32];
        switch (kind_) {
            case Kind::Null: out += "null"; break;
            case Kind::False: out += "false"; break;
            case Kind::True: out += "true"; break;
            case Kind::Number: std::snprintf(number, sizeof number, "%.17g", number_); out += number; break;
            case Kind::String: write_string(out, string_); break;
            case Kind::Array:
            case Kind::Object:
                out += kind_ == Kind::Array ? '[' : '{';
                for (size_t i = 0; i < items_.size(); ++i) {
                    if (i) out += ',';
                    if (kind_ == Kind::Object) { write_string(out, keys_[i]); out += ':'; }
                    items_[i].write(out);
                }
                out += kind_ == Kind::Array ? ']' : '}';
                break;
        }
    }
};
