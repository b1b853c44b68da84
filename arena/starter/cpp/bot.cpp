// A Patchwork bot for patchwork-arena, in C++17, over stdio (JSON lines).
//
// The protocol is in protocol/PROTOCOL.md of the patchwork-arena repository (section 2
// for stdio, section 5 for every message). This bot needs no JSON library and no move
// generator: its hello asks the referee for the legal moves, and each answer copies one
// of them verbatim. The small scanner below finds a top-level field of a message; use a
// real JSON library (nlohmann/json, RapidJSON...) once your bot reads the state.
//
// Rules of the road: one JSON message per line on stdout, flushed at once (std::endl or
// std::flush: an unflushed move never arrives); log to std::cerr (the arena keeps it in the
// bot's log); play games until "shutdown": one process plays many games.
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

static const char *const NAME = "@NAME@";

namespace {

// The length of the JSON value at the start of s (after blanks skipped by the caller).
std::optional<size_t> value_length(std::string_view s) {
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < s.size(); ++i) {
        char c = s[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') {
                in_string = false;
                if (depth == 0) return i + 1;
            }
        } else if (c == '"') in_string = true;
        else if (c == '{' || c == '[') ++depth;
        else if (c == '}' || c == ']') {
            if (depth == 0) return i;  // the end of the enclosing container
            if (--depth == 0) return i + 1;
        } else if (depth == 0 && (c == ',' || c == ' ' || c == '\r' || c == '\n')) return i;
    }
    if (depth == 0 && !in_string) return s.size();
    return std::nullopt;
}

size_t skip_blanks(std::string_view s, size_t i, std::string_view blanks = " \t\r\n") {
    while (i < s.size() && blanks.find(s[i]) != std::string_view::npos) ++i;
    return i;
}

// The raw text of the top-level field `key` of the JSON object in msg.
std::optional<std::string_view> field(std::string_view msg, std::string_view key) {
    size_t i = skip_blanks(msg, 0);
    if (i >= msg.size() || msg[i] != '{') return std::nullopt;
    ++i;
    for (;;) {
        i = skip_blanks(msg, i, " \t\r\n,");
        if (i >= msg.size() || msg[i] != '"') return std::nullopt;
        auto name_len = value_length(msg.substr(i));
        if (!name_len) return std::nullopt;
        std::string_view name = msg.substr(i + 1, *name_len - 2);
        i = skip_blanks(msg, i + *name_len, " \t\r\n:");
        auto len = value_length(msg.substr(i));
        if (!len) return std::nullopt;
        if (name == key) return msg.substr(i, *len);
        i += *len;
    }
}

// The elements of a JSON array given as raw text.
std::vector<std::string_view> elements(std::string_view array) {
    std::vector<std::string_view> out;
    if (array.empty() || array[0] != '[') return out;
    size_t i = 1;
    for (;;) {
        i = skip_blanks(array, i, " \t\r\n,");
        if (i >= array.size() || array[i] == ']') return out;
        auto len = value_length(array.substr(i));
        if (!len || *len == 0) return out;
        out.push_back(array.substr(i, *len));
        i += *len;
    }
}

std::mt19937 rng{std::random_device{}()};

// Your strategy goes here: the request's "state" is the position (PROTOCOL.md section 4)
// and "legal_moves" every legal move. This one plays a random legal move.
std::optional<std::string_view> choose_move(std::string_view request) {
    auto list = field(request, "legal_moves");
    if (!list) return std::nullopt;
    auto moves = elements(*list);
    if (moves.empty()) return std::nullopt;
    return moves[std::uniform_int_distribution<size_t>(0, moves.size() - 1)(rng)];
}

}  // namespace

int main() {
    std::ios::sync_with_stdio(false);
    std::cout << R"({"type":"hello","name":")" << NAME
              << R"(","version":"0.1","protocol":1,"capabilities":{"legal_moves":true}})" << std::endl;
    std::string line;
    while (std::getline(std::cin, line)) {  // end of input: the referee is gone
        auto type = field(line, "type").value_or("");
        if (type == "\"move_request\"") {
            auto seq = field(line, "seq");
            auto move = choose_move(line);
            if (!seq || !move) {
                std::cout << R"({"type":"error","message":"cannot read this move_request"})" << std::endl;
                return 1;
            }
            std::cout << R"({"type":"move","seq":)" << *seq << R"(,"move":)" << *move << "}" << std::endl;
        } else if (type == "\"shutdown\"") {
            return 0;
        } else if (type == "\"new_game\"" || type == "\"game_over\"" || type == "\"error\"") {
            std::cerr << line.substr(0, 300) << (line.size() > 300 ? "..." : "") << std::endl;
        }  // welcome, and types added by later versions: nothing to do
    }
    return 0;
}
