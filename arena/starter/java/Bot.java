// A Patchwork bot for patchwork-arena, in Java (17+), over stdio (JSON lines).
//
// The protocol is in protocol/PROTOCOL.md of the patchwork-arena repository (section 2
// for stdio, section 5 for every message). This bot needs no JSON library and no move
// generator: its hello asks the referee for the legal moves, and each answer copies one
// of them verbatim. The small scanner below finds a top-level field of a message; use a
// real JSON library (Jackson, Gson...) once your bot reads the state (then build a jar).
//
// It runs as a single source file (`java Bot.java`, no build step). Rules of the road: one
// JSON message per line on stdout, flushed at once; log to System.err (the arena keeps it
// in the bot's log); play games until "shutdown": one process plays many games.
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

public class Bot {
    static final String NAME = "@NAME@";
    static final Random RANDOM = new Random();
    static final PrintStream OUT = new PrintStream(System.out, false, StandardCharsets.UTF_8);

    static void send(String message) {
        OUT.print(message + "\n");
        OUT.flush(); // an unflushed move never arrives
    }

    /** The length of the JSON value at the start of s[from..], or -1 if it is malformed. */
    static int valueLength(String s, int from) {
        int depth = 0;
        boolean inString = false;
        for (int i = from; i < s.length(); i++) {
            char c = s.charAt(i);
            if (inString) {
                if (c == '\\') i++;
                else if (c == '"') {
                    inString = false;
                    if (depth == 0) return i + 1 - from;
                }
            } else if (c == '"') inString = true;
            else if (c == '{' || c == '[') depth++;
            else if (c == '}' || c == ']') {
                if (depth == 0) return i - from; // the end of the enclosing container
                if (--depth == 0) return i + 1 - from;
            } else if (depth == 0 && (c == ',' || c == ' ' || c == '\r' || c == '\n')) return i - from;
        }
        return depth == 0 && !inString ? s.length() - from : -1;
    }

    static int skip(String s, int i, String blanks) {
        while (i < s.length() && blanks.indexOf(s.charAt(i)) >= 0) i++;
        return i;
    }

    /** The raw text of the top-level field {@code key} of the JSON object in msg, or null. */
    static String field(String msg, String key) {
        int i = skip(msg, 0, " \t");
        if (i >= msg.length() || msg.charAt(i) != '{') return null;
        i++;
        while (true) {
            i = skip(msg, i, " \t\r\n,");
            if (i >= msg.length() || msg.charAt(i) != '"') return null;
            int nameLength = valueLength(msg, i);
            if (nameLength < 2) return null;
            String name = msg.substring(i + 1, i + nameLength - 1);
            i = skip(msg, i + nameLength, " \t\r\n:");
            int length = valueLength(msg, i);
            if (length < 0) return null;
            if (name.equals(key)) return msg.substring(i, i + length);
            i += length;
        }
    }

    /** The elements of a JSON array given as raw text. */
    static List<String> elements(String array) {
        List<String> out = new ArrayList<>();
        if (array == null || !array.startsWith("[")) return out;
        int i = 1;
        while (true) {
            i = skip(array, i, " \t\r\n,");
            if (i >= array.length() || array.charAt(i) == ']') return out;
            int length = valueLength(array, i);
            if (length <= 0) return out;
            out.add(array.substring(i, i + length));
            i += length;
        }
    }

    /**
     * Your strategy goes here: the request's "state" is the position (PROTOCOL.md section 4)
     * and "legal_moves" every legal move. This one plays a random legal move.
     */
    static String chooseMove(String request) {
        List<String> moves = elements(field(request, "legal_moves"));
        return moves.isEmpty() ? null : moves.get(RANDOM.nextInt(moves.size()));
    }

    public static void main(String[] args) throws IOException {
        send("{\"type\":\"hello\",\"name\":\"" + NAME + "\",\"version\":\"0.1\",\"protocol\":1,"
                + "\"capabilities\":{\"legal_moves\":true}}");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) { // end of input: the referee is gone
            String type = field(line, "type");
            if ("\"move_request\"".equals(type)) {
                String seq = field(line, "seq");
                String move = chooseMove(line);
                if (seq == null || move == null) {
                    send("{\"type\":\"error\",\"message\":\"cannot read this move_request\"}");
                    return;
                }
                send("{\"type\":\"move\",\"seq\":" + seq + ",\"move\":" + move + "}");
            } else if ("\"shutdown\"".equals(type)) {
                return;
            } else if ("\"new_game\"".equals(type) || "\"game_over\"".equals(type) || "\"error\"".equals(type)) {
                System.err.println(line.length() > 300 ? line.substring(0, 300) + "..." : line);
            } // welcome, and types added by later versions: nothing to do
        }
    }
}
