package health

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHealth(t *testing.T) {
	st := Status{Running: 2, Streams: 5}
	calls := 0
	h := Handler(func() Status { return st }, func() { calls++; st.Draining = true })
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func() (int, map[string]any) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, doc
	}
	if code, doc := get(); code != 200 || doc["status"] != "serving" || doc["running_tests"] != 2.0 || doc["running_streams"] != 5.0 {
		t.Fatalf("serving: %d %v", code, doc)
	}
	if resp, err := http.Get(srv.URL + "/lameduck"); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET /lameduck: %v %v", resp.Status, err)
	}
	resp, err := http.Post(srv.URL+"/lameduck", "", strings.NewReader(""))
	if err != nil || resp.StatusCode != http.StatusAccepted || calls != 1 {
		t.Fatalf("POST /lameduck: %v %v, %d calls", resp.Status, err, calls)
	}
	if code, doc := get(); code != http.StatusServiceUnavailable || doc["status"] != "draining" {
		t.Fatalf("draining: %d %v", code, doc)
	}
}

// Only the server's own host may take it out of service.
func TestLameDuckFromElsewhere(t *testing.T) {
	calls := 0
	h := Handler(func() Status { return Status{} }, func() { calls++ })
	for _, remote := range []string{"192.0.2.7:4000", "[2001:db8::1]:4000", "garbage"} {
		r := httptest.NewRequest("POST", "/lameduck", nil)
		r.RemoteAddr = remote
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusForbidden {
			t.Errorf("from %s: %d", remote, w.Code)
		}
	}
	if calls != 0 {
		t.Errorf("lame duck called %d times from other hosts", calls)
	}
}
