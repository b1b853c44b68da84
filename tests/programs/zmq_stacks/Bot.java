// A ZeroMQ bot in Java with JeroMQ (tests/channel/test_zmq_stacks.py): hello, then the first
// legal move of each request, found in the text (the referee's JSON is compact).
import org.zeromq.ZMQ;

public class Bot {
    public static void main(String[] args) throws Exception {
        ZMQ.Context ctx = ZMQ.context(1);
        ZMQ.Socket sock = ctx.socket(ZMQ.DEALER);
        sock.setIdentity(System.getenv("ARENA_TOKEN").getBytes("UTF-8"));
        sock.setLinger(0);
        sock.connect(args.length > 0 ? args[0] : System.getenv("ARENA_ENDPOINT"));
        sock.send(("{\"type\":\"hello\",\"name\":\"java-jeromq\",\"version\":\"0.1\",\"protocol\":1,"
                   + "\"capabilities\":{\"legal_moves\":true}}").getBytes("UTF-8"), 0);
        while (true) {
            String msg = new String(sock.recv(0), "UTF-8");
            if (msg.contains("\"type\":\"shutdown\"")) break;
            if (!msg.contains("\"type\":\"move_request\"")) continue;
            int i = msg.indexOf("\"seq\":") + 6, j = i;
            while (Character.isDigit(msg.charAt(j))) j++;
            int start = msg.indexOf('{', msg.indexOf("\"legal_moves\":")), end = start, depth = 0;
            do {
                char c = msg.charAt(end++);
                if (c == '{') depth++;
                else if (c == '}') depth--;
            } while (depth > 0);
            sock.send(("{\"type\":\"move\",\"seq\":" + msg.substring(i, j) + ",\"move\":"
                       + msg.substring(start, end) + "}").getBytes("UTF-8"), 0);
        }
        sock.close();
        ctx.term();
    }
}
