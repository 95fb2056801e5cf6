package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// The API contract, docs/openapi.yaml, is kept true by the end-to-end suite:
// TestMain puts contractTransport under http.DefaultTransport, so every
// /api request a test makes and every answer it gets is checked against the
// document, and the run fails listing each mismatch. A request is checked
// when the server accepted it (2xx): refused requests are often off the
// contract on purpose (the abuse tests), but their answers are checked all
// the same.

// contractPath is the document, from this package's directory.
var contractPath = filepath.Join("..", "..", "docs", "openapi.yaml")

// contractSpec is the loaded document and its router, loaded once.
var contractSpec = sync.OnceValues(func() (*openapi3.T, routers.Router) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(contractPath)
	if err != nil {
		panic(fmt.Sprintf("load %s: %v", contractPath, err))
	}
	router, err := legacy.NewRouter(doc) // validates the document
	if err != nil {
		panic(fmt.Sprintf("%s: %v", contractPath, err))
	}
	return doc, router
})

// contractOptions are the validator's: every status must be in the document;
// authentication is the server's business, not the schema's.
var contractOptions = &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true,
	AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}

// contractMismatch is one exchange the document does not describe.
type contractMismatch struct {
	host, method, path, route string
	status                    int
	msg                       string
}

func (m contractMismatch) String() string {
	return fmt.Sprintf("%s %s (%s) → %d: %s", m.method, m.path, m.route, m.status, m.msg)
}

// contractLog gathers the suite's mismatches, one of each kind, and counts
// the exchanges checked per method, route and status.
var contractLog struct {
	sync.Mutex
	seen       map[string]bool
	mismatches []contractMismatch
	checked    map[string]int
	spent      time.Duration // in checkExchange
	runs       int
}

// contractChecksPerKind bounds the exchanges checked per method, route and
// status, so the load tests' thousands of grabs cost what a few hundred do.
const contractChecksPerKind = 300

// contractTransport checks the /api exchanges that pass through it.
type contractTransport struct{ next http.RoundTripper }

// maxCapturedBody is the most of a request body kept for the check.
const maxCapturedBody = 1 << 20

// capturedBody keeps what the transport sends of a request body. The
// transport reads it on its own goroutine, which may still be at it when
// the answer comes back (a server that answers before the whole body), so
// the copy is under a lock.
type capturedBody struct {
	io.ReadCloser
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *capturedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.mu.Lock()
	if room := maxCapturedBody - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(n, room)])
	}
	c.mu.Unlock()
	return n, err
}

// sent is a copy of what was read so far.
func (c *capturedBody) sent() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.buf.Bytes())
}

func (t contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasPrefix(req.URL.Path, "/api/") {
		return t.next.RoundTrip(req)
	}
	var sent *capturedBody
	if req.Body != nil && req.Body != http.NoBody {
		sent = &capturedBody{ReadCloser: req.Body}
		req.Body = sent
	}
	res, err := t.next.RoundTrip(req)
	if err != nil {
		return res, err
	}
	raw, rerr := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(raw))
	if rerr != nil { // the test sees the same short body; nothing to check
		return res, nil
	}
	var reqBody []byte
	if sent != nil {
		reqBody = sent.sent()
	}
	_, router := contractSpec()
	route, _, _ := router.FindRoute(req)
	kind := fmt.Sprintf("%s %s %d", req.Method, routePath(route), res.StatusCode)
	contractLog.Lock()
	if contractLog.checked == nil {
		contractLog.checked = map[string]int{}
	}
	contractLog.checked[kind]++
	skip := contractLog.checked[kind] > contractChecksPerKind
	contractLog.Unlock()
	if skip {
		return res, nil
	}
	began := time.Now()
	err = checkExchange(req, reqBody, res.StatusCode, res.Header, raw)
	contractLog.Lock()
	contractLog.spent += time.Since(began)
	contractLog.runs++
	contractLog.Unlock()
	if err != nil {
		recordMismatch(contractMismatch{host: req.URL.Host, method: req.Method, path: req.URL.RequestURI(),
			route: routePath(route), status: res.StatusCode, msg: err.Error()})
	}
	return res, nil
}

func routePath(route *routers.Route) string {
	if route == nil {
		return "no route"
	}
	return route.Path
}

func recordMismatch(m contractMismatch) {
	key := m.method + " " + m.route + " " + fmt.Sprint(m.status) + " " + m.msg
	contractLog.Lock()
	defer contractLog.Unlock()
	if contractLog.seen == nil {
		contractLog.seen = map[string]bool{}
	}
	if !contractLog.seen[key] {
		contractLog.seen[key] = true
		contractLog.mismatches = append(contractLog.mismatches, m)
	}
}

// checkExchange validates one exchange against the document: the request
// when the server accepted it, the answer always. A path the document does
// not name is a mismatch unless the server said not_found too.
func checkExchange(req *http.Request, reqBody []byte, status int, header http.Header, body []byte) error {
	_, router := contractSpec()
	route, params, err := router.FindRoute(req)
	if err != nil {
		if status == http.StatusNotFound {
			return nil // an unknown endpoint, and the server says so
		}
		return fmt.Errorf("not in the document: %v", err)
	}
	// A copy of the request whose body can be read again.
	r := req.Clone(context.Background())
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: contractOptions}
	if status >= 200 && status < 300 {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			return fmt.Errorf("request: %v", err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header, Options: contractOptions}
	out.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return fmt.Errorf("answer %.300q: %v", body, err)
	}
	return nil
}

// installContractCheck puts the contract check under http.DefaultTransport
// (and so under http.DefaultClient and every client without a transport).
func installContractCheck() {
	contractSpec() // a broken document fails the run at once
	http.DefaultTransport = contractTransport{next: http.DefaultTransport}
}

// contractReport lists the suite's mismatches; it returns false when there were some.
func contractReport() bool {
	contractLog.Lock()
	defer contractLog.Unlock()
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "contract: %d /api exchanges checked against %s in %v\n", contractLog.runs, contractPath, contractLog.spent.Round(time.Millisecond))
	}
	if len(contractLog.mismatches) == 0 {
		return true
	}
	ms := append([]contractMismatch(nil), contractLog.mismatches...)
	sort.Slice(ms, func(i, j int) bool { return ms[i].String() < ms[j].String() })
	fmt.Fprintf(os.Stderr, "FAIL: %d exchanges break the API contract %s (fix the document, or the server if it broke its word):\n", len(ms), contractPath)
	for _, m := range ms {
		fmt.Fprintf(os.Stderr, "  %s\n", m)
	}
	return false
}

// mismatchesOf are the mismatches of the server at base (a testApp's URL).
func mismatchesOf(base string) []contractMismatch {
	u, _ := url.Parse(base)
	contractLog.Lock()
	defer contractLog.Unlock()
	var out []contractMismatch
	for _, m := range contractLog.mismatches {
		if m.host == u.Host {
			out = append(out, m)
		}
	}
	return out
}

// The document is valid OpenAPI 3.1; it names exactly the /api routes the
// server registers; and representative exchanges (a grab, sold out, invalid
// input, a list, an unknown endpoint) pass it, while a tampered answer does not.
func TestOpenAPIContract(t *testing.T) {
	doc, _ := contractSpec()
	if doc.OpenAPI != "3.1.0" || !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi: %q, want 3.1.0", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document is not valid: %v", err)
	}
	a := startApp(t)

	// Every /api route registered is in the document, and nothing more.
	served := map[string]bool{}
	for _, r := range a.Web.App.GetRoutes(true) {
		if !strings.HasPrefix(r.Path, "/api/") || r.Method == http.MethodHead {
			continue
		}
		parts := strings.Split(r.Path, "/")
		for i, p := range parts {
			if strings.HasPrefix(p, ":") {
				parts[i] = "{" + p[1:] + "}"
			}
		}
		served[r.Method+" "+strings.Join(parts, "/")] = true
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	for k := range served {
		if !documented[k] {
			t.Errorf("the server has %s; docs/openapi.yaml does not", k)
		}
	}
	for k := range documented {
		if !served[k] {
			t.Errorf("docs/openapi.yaml has %s; the server does not", k)
		}
	}

	// Representative exchanges, each checked here whatever the suite's tally.
	check := func(method, path, token string, body any, want int) []byte {
		t.Helper()
		var rd io.Reader
		var sent []byte
		if body != nil {
			sent, _ = json.Marshal(body)
			rd = bytes.NewReader(sent)
		}
		req, err := http.NewRequest(method, a.URL+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultTransport.(contractTransport).next.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, res.StatusCode, raw, want)
		}
		req.Body = io.NopCloser(bytes.NewReader(sent))
		if err := checkExchange(req, sent, res.StatusCode, res.Header, raw); err != nil {
			t.Errorf("%s %s → %d breaks the contract: %v", method, path, res.StatusCode, err)
		}
		return raw
	}
	mt, g := a.liveGoods(1, 1)
	u1, _ := a.newUser()
	u2, _ := a.newUser()
	grab := fmt.Sprintf("/api/goods/%d/grab", g.ID)
	won := check("POST", grab, u1, nil, 201)
	check("POST", grab, u2, nil, 409) // sold_out
	check("POST", "/api/admin/goods", mt, map[string]any{"slot_id": g.SlotID, "title": "", "stock": 0}, 400)
	check("GET", fmt.Sprintf("/api/slots/%d/goods", g.SlotID), "", nil, 200)
	check("GET", "/api/me/orders", u1, nil, 200)
	check("GET", "/api/no/such/endpoint", u1, nil, 404)

	// A tampered answer is caught: the order's amount as a string.
	var ans map[string]map[string]any
	if err := json.Unmarshal(won, &ans); err != nil {
		t.Fatal(err)
	}
	ans["order"]["amount_cents"] = "2500"
	bad, _ := json.Marshal(ans)
	req, _ := http.NewRequest("POST", a.URL+grab, nil)
	if err := checkExchange(req, nil, 201, http.Header{"Content-Type": {"application/json"}}, bad); err == nil {
		t.Error("an order whose amount_cents is a string passed the contract")
	}
	delete(ans["order"], "status")
	bad, _ = json.Marshal(ans)
	if err := checkExchange(req, nil, 201, http.Header{"Content-Type": {"application/json"}}, bad); err == nil {
		t.Error("an order without its status passed the contract")
	}

	// So is a refusal whose code does not go with its status, and a status the route does not answer.
	if err := checkExchange(req, nil, 409, http.Header{"Content-Type": {"application/json"}}, []byte(`{"error":{"code":"invalid","message":"x"}}`)); err == nil {
		t.Error("a 409 with code invalid passed the contract")
	}
	if err := checkExchange(req, nil, 200, http.Header{"Content-Type": {"application/json"}}, won); err == nil {
		t.Error("a grab answering 200 passed the contract")
	}

	// And the hook saw this server's calls (liveGoods, newUser) without a mismatch.
	for _, m := range mismatchesOf(a.URL) {
		t.Errorf("contract: %s", m)
	}
}
