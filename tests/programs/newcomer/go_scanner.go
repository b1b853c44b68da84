// Reads each message with a bufio.Scanner left at its default size and plays the first legal
// move. A Scanner stops at a line over 64 KiB (Scan returns false, Err says "token too
// long"): on a move_request that long the loop ends and the bot exits with status 0, as a
// newcomer's bot does in 1 game in 40 of a tournament.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	fmt.Println(`{"type":"hello","name":"go-scanner","version":"1","protocol":1,"capabilities":{"legal_moves":true}}`)
	scanner := bufio.NewScanner(os.Stdin)
	for scanner.Scan() {
		var msg struct {
			Type       string            `json:"type"`
			Seq        int               `json:"seq"`
			LegalMoves []json.RawMessage `json:"legal_moves"`
		}
		if err := json.Unmarshal(scanner.Bytes(), &msg); err != nil {
			fmt.Fprintln(os.Stderr, "bad message:", err)
			continue
		}
		switch msg.Type {
		case "move_request":
			fmt.Printf("{\"type\":\"move\",\"seq\":%d,\"move\":%s}\n", msg.Seq, msg.LegalMoves[0])
		case "shutdown":
			return
		}
	}
}
