// goserver — a JSON-RPC 2.0 server on stdin/stdout written with Go's standard
// library only: the start-up peer of bench/start.sh (issue 30: netmodel's
// spawn → first answer within 2× of it).
//
// It does what a small real server does before its first answer, and no more:
// reads a message in either framing of netmodel's transport (Content-Length
// headers, detected from the first byte, or one JSON message per line), decodes
// it with encoding/json, answers `initialize` with a server description shaped
// like netmodel's, and any other method with error -32601. It exits 0 at EOF.
//
//	go build -o bench/bin/goserver bench/goserver.go
package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
)

type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

type serverInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type initializeResult struct {
	ServerInfo      serverInfo `json:"serverInfo"`
	ProtocolVersion string     `json:"protocolVersion"`
	Capabilities    struct {
		Methods []string `json:"methods"`
	} `json:"capabilities"`
}

type responseError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *responseError  `json:"error,omitempty"`
}

var methods = []string{"exit", "initialize", "shutdown", "stats"}

func answer(message []byte) ([]byte, bool) {
	var req request
	if err := json.Unmarshal(message, &req); err != nil {
		out, _ := json.Marshal(response{JSONRPC: "2.0", ID: json.RawMessage("null"),
			Error: &responseError{Code: -32700, Message: "parse error"}})
		return out, true
	}
	if req.ID == nil {
		return nil, false // a notification
	}
	reply := response{JSONRPC: "2.0", ID: req.ID}
	if req.Method == "initialize" {
		var result initializeResult
		result.ServerInfo = serverInfo{Name: "goserver", Version: "1.0"}
		result.ProtocolVersion = "1.0"
		result.Capabilities.Methods = methods
		reply.Result = result
	} else {
		reply.Error = &responseError{Code: -32601, Message: "method not found: " + req.Method}
	}
	out, _ := json.Marshal(reply)
	return out, true
}

// readLSP reads one Content-Length framed message; nil at EOF.
func readLSP(in *bufio.Reader) []byte {
	length := -1
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return nil
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if name, value, ok := strings.Cut(line, ":"); ok && strings.EqualFold(name, "Content-Length") {
			length, _ = strconv.Atoi(strings.TrimSpace(value))
		}
	}
	if length < 0 {
		return nil
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(in, body); err != nil {
		return nil
	}
	return body
}

func main() {
	in := bufio.NewReaderSize(os.Stdin, 64*1024)
	out := bufio.NewWriter(os.Stdout)
	first, err := in.Peek(1)
	if err != nil {
		return
	}
	lsp := first[0] == 'C' || first[0] == 'c'
	for {
		var message []byte
		if lsp {
			message = readLSP(in)
		} else {
			line, err := in.ReadBytes('\n')
			if len(strings.TrimSpace(string(line))) > 0 {
				message = line
			} else if err != nil {
				message = nil
			} else {
				continue
			}
		}
		if message == nil {
			out.Flush()
			return
		}
		if reply, ok := answer(message); ok {
			if lsp {
				out.WriteString("Content-Length: " + strconv.Itoa(len(reply)) + "\r\n\r\n")
				out.Write(reply)
			} else {
				out.Write(reply)
				out.WriteByte('\n')
			}
		}
		// One flush per read, as netmodel and the null server do.
		if in.Buffered() == 0 {
			out.Flush()
		}
	}
}
