// An HTTP/2 server for scripts/conformance/h2-client.sh (issue #32): golang.org/x/net/http2's
// server, cleartext with prior knowledge only (RFC 9113 §3.3: every connection must start
// with the HTTP/2 preface; there is no HTTP/1.1 fallback), on 127.0.0.1 at an ephemeral
// port, serving what wirebench's `http` client asks of a server: POST /echo?seq=N answers
// the body, POST /sink?seq=N reads it and answers nothing.
//
// It says where it listens (`h2server listening on 127.0.0.1:PORT`), then one line per
// protocol error the server counted (`h2server error: TYPE`, from http2.Server.CountError:
// every connection or stream error it detected or sent) and per connection that ended on
// an error. It runs until it is stopped.
package main

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"

	"golang.org/x/net/http2"
)

func handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	switch r.URL.Path {
	case "/echo", "/":
		w.Write(body)
	case "/sink":
	default:
		http.Error(w, "no such path", http.StatusNotFound)
	}
}

func main() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := &http2.Server{
		CountError: func(errType string) { fmt.Printf("h2server error: %s\n", errType) },
	}
	fmt.Printf("h2server listening on %s\n", l.Addr())
	os.Stdout.Sync()
	opts := &http2.ServeConnOpts{
		Handler: http.HandlerFunc(handle),
		// What the server logs about a connection (with GODEBUG=http2debug=1, every
		// frame) goes to stdout beside the counted errors.
		BaseConfig: &http.Server{ErrorLog: log.New(os.Stdout, "h2server log: ", 0)},
	}
	for {
		c, err := l.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go srv.ServeConn(c, opts)
	}
}
