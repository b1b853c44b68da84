// A Patchwork bot for patchwork-arena, in C++17, over stdio (JSON lines).
//
// The protocol is in protocol/PROTOCOL.md of the patchwork-arena repository (section 2
// for stdio, section 5 for every message). This bot needs no move generator: its hello asks
// the referee for the legal moves, and it answers with one of them. Each message is read
// whole (std::getline into a std::string: a move_request with its legal moves can pass
// 80 KB) and parsed by json.hpp, the small parser beside this file (yours to keep or change).
// A strict build sees only the host's packages: a JSON library of your own choice goes in
// the bot folder (nlohmann/json's single json.hpp, say), see docs/compiled-bots.md.
//
// Rules of the road: one JSON message per line on stdout, flushed at once (std::endl or
// std::flush: an unflushed move never arrives); log to std::cerr (the arena keeps it in the
// bot's log); play games until "shutdown": one process plays many games; ignore the message
// types you do not handle (welcome, and those of later versions).
#include <iostream>
#include <map>
#include <random>
#include <string>

#include "json.hpp"

static const char *const NAME = "@NAME@";

namespace {

struct Patch {
    int buttons_cost, time_cost, income;
};
std::map<int, Patch> patches;  // by id, from new_game's components
int final_space = 53;
std::mt19937 rng{std::random_device{}()};

void read_components(const Json &new_game) {
    const Json &components = new_game["components"];
    final_space = int(components["time_board"]["final_space"].num());
    patches.clear();
    for (const Json &patch : components["patches"].items())
        patches[int(patch["id"].num())] = {int(patch["buttons_cost"].num()), int(patch["time_cost"].num()),
                                           int(patch["income"].num())};
}

// Your strategy goes here: the request's "state" is the position (PROTOCOL.md section 4)
// and "legal_moves" every legal move. This one values a purchase by the cells it covers and
// the income it will pay over the rest of the game, less its price in buttons, per space
// of time it costs; it keeps a few buttons in hand, and advances when nothing is worth
// more (a random choice among equals).
const Json *choose_move(const Json &request) {
    const Json &state = request["state"];
    size_t seat = size_t(state["to_move"].num());
    int buttons = int(state["buttons"][seat].num());
    double incomes_left = (final_space - state["positions"][seat].num()) / 6.0;  // paid about every 6 spaces
    const Json *best = nullptr;
    double best_value = -1e9;
    int ties = 0;
    for (const Json &move : request["legal_moves"].items()) {
        double value = 0;  // advance, and a special patch's placement
        if (move["action"].is("buy")) {
            auto found = patches.find(int(move["patch"].num()));
            if (found == patches.end()) continue;
            const Patch &patch = found->second;
            double gain = 2.0 * move["cells"].size() + patch.income * incomes_left - patch.buttons_cost;
            value = gain / (patch.time_cost > 0 ? patch.time_cost : 1);
            if (buttons - patch.buttons_cost < 2) value -= 1;  // keep a few buttons
        }
        if (value > best_value) {
            best = &move;
            best_value = value;
            ties = 1;
        } else if (value == best_value && std::uniform_int_distribution<int>(0, ties++)(rng) == 0) {
            best = &move;
        }
    }
    return best;
}

}  // namespace

int main() {
    std::ios::sync_with_stdio(false);
    std::cout << R"({"type":"hello","name":")" << NAME
              << R"(","version":"0.2","protocol":1,"capabilities":{"legal_moves":true}})" << std::endl;
    std::string line;
    while (std::getline(std::cin, line)) {  // the whole line, however long; end: the referee is gone
        auto message = Json::parse(line);
        if (!message) {
            std::cerr << "not JSON: " << line.substr(0, 200) << std::endl;
            continue;
        }
        const Json &type = (*message)["type"];
        if (type.is("move_request")) {
            const Json *move = choose_move(*message);
            if (!move) {
                std::cout << R"({"type":"error","message":"no move to choose in this move_request"})" << std::endl;
                return 1;
            }
            std::cout << R"({"type":"move","seq":)" << (*message)["seq"].dump() << R"(,"move":)" << move->dump()
                      << "}" << std::endl;
        } else if (type.is("new_game")) {
            read_components(*message);
            std::cerr << "new game " << (*message)["game_id"].str() << ", seat " << (*message)["seat"].dump()
                      << std::endl;
        } else if (type.is("game_over") || type.is("error")) {
            std::cerr << line.substr(0, 300) << (line.size() > 300 ? "..." : "") << std::endl;
        } else if (type.is("shutdown")) {
            return 0;
        }  // welcome, and types added by later versions: nothing to do
    }
    return 0;
}
