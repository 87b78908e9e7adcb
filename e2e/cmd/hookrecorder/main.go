// Command hookrecorder is a webhook endpoint for the container tests: it
// answers 200 to every POST and keeps it (path, headers, body), and lists what
// it kept at GET /recorded. It verifies nothing: the test does, with the
// gateway's JWKS, as an app would. It runs in a container beside the compose
// stack, so the delivery crosses the stack's own network.
package main

import (
	"encoding/json"
	"io"
	"log"
	"net/http"
	"os"
	"sync"
	"time"
)

type request struct {
	Path   string      `json:"path"`
	Header http.Header `json:"header"`
	Body   []byte      `json:"body"`
}

func main() {
	var (
		mu   sync.Mutex
		kept []request
	)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hooks/", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		kept = append(kept, request{Path: r.URL.Path, Header: r.Header, Body: body})
		mu.Unlock()
	})
	mux.HandleFunc("GET /recorded", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(kept)
	})
	addr := ":8080"
	if len(os.Args) > 1 {
		addr = os.Args[1]
	}
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
