// Package stripetest starts stripe-mock, Stripe's offline stand-in for its
// API, for tests, and signs webhook events as Stripe would.
package stripetest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	stripego "github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"
)

// Keys the tests use with stripe-mock (which takes any sk_test_ key).
const (
	SecretKey     = "sk_test_seckill"
	WebhookSecret = "whsec_seckill_test"
)

// Binary finds stripe-mock on PATH or in Go's bin folder; "" when it is not installed.
func Binary() string {
	if p, err := exec.LookPath("stripe-mock"); err == nil {
		return p
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = strings.TrimSpace(string(out))
		}
	}
	for _, dir := range filepath.SplitList(gopath) {
		p := filepath.Join(dir, "bin", "stripe-mock")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// Start runs stripe-mock for the test and answers the base URL to use; the
// test is skipped, saying how to install it, when stripe-mock is not found.
// STRIPE_MOCK_URL names one already running (as .ci/run starts it).
//
// stripe-mock answers from fixtures, and its PaymentIntent's next_action is a
// placeholder ({"type":"type"}): a confirmed WeChat Pay PaymentIntent gets no
// QR code. So the URL answered is a front that passes every request to
// stripe-mock and fills that one answer as Stripe does (status
// requires_action, next_action.wechat_pay_display_qr_code with its data and
// image_data_url, a PNG data URL: QRDataURL).
func Start(t testing.TB) string {
	t.Helper()
	u, _ := StartListing(t)
	return u
}

// Listing is what Stripe's lists answer through the front: stripe-mock keeps
// nothing and lists its fixtures, so a test that needs the provider to hold
// certain payments (reconciliation) says which. Until Set is called the
// lists go to stripe-mock.
type Listing struct {
	mu       sync.Mutex
	set      bool
	sessions []Session
	intents  []Intent
}

// Set makes GET /v1/checkout/sessions answer sessions (as completed Checkout
// Sessions) and GET /v1/payment_intents answer intents (as PaymentIntent
// trades), each with its refunded amount on its latest charge.
func (l *Listing) Set(sessions []Session, intents []Intent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.set, l.sessions, l.intents = true, sessions, intents
}

// answer writes the list path asks for, and reports whether it did.
func (l *Listing) answer(w http.ResponseWriter, r *http.Request) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.set || r.Method != http.MethodGet {
		return false
	}
	charge := func(id string, refunded int64) map[string]any {
		return map[string]any{"id": "ch_" + id, "object": "charge", "amount_refunded": refunded, "refunded": refunded > 0}
	}
	var data []map[string]any
	switch r.URL.Path {
	case "/v1/checkout/sessions":
		for _, s := range l.sessions {
			order := fmt.Sprint(s.OrderID)
			data = append(data, map[string]any{
				"id": s.ID, "object": "checkout.session", "mode": "payment", "status": "complete", "created": s.Created.Unix(),
				"payment_status": s.PaymentStatus, "amount_total": s.AmountCents, "currency": s.Currency,
				"client_reference_id": order, "metadata": map[string]string{"order_id": order},
				"payment_intent": map[string]any{"id": s.PaymentIntent, "object": "payment_intent", "latest_charge": charge(s.PaymentIntent, s.RefundedCents)},
			})
		}
	case "/v1/payment_intents":
		for _, in := range l.intents {
			data = append(data, map[string]any{
				"id": in.ID, "object": "payment_intent", "status": in.Status, "amount": in.AmountCents, "currency": in.Currency,
				"created": in.Created.Unix(), "payment_method_types": []string{"wechat_pay"},
				"metadata":      map[string]string{"order_id": fmt.Sprint(in.OrderID), "trade": "payment_intent"},
				"latest_charge": charge(in.ID, in.RefundedCents),
			})
		}
	default:
		return false
	}
	if data == nil {
		data = []map[string]any{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "url": r.URL.Path, "has_more": false, "data": data})
	return true
}

// StartListing is Start, and the Listing its front answers Stripe's lists from.
func StartListing(t testing.TB) (string, *Listing) {
	t.Helper()
	u := os.Getenv("STRIPE_MOCK_URL")
	if u == "" {
		u = startMock(t)
	}
	base, err := url.Parse(u)
	if err != nil {
		t.Fatalf("STRIPE_MOCK_URL %q: %v", u, err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(base)
			r := pr.Out
			if r.Method != http.MethodPost || r.URL.Path != "/v1/payment_intents" || r.Body == nil {
				return
			}
			b, err := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			if f, perr := url.ParseQuery(string(b)); err == nil && perr == nil && f.Get("confirm") == "true" && f.Get("payment_method_data[type]") == "wechat_pay" {
				r.Header.Set(wechatHeader, "1")
			}
		},
		ModifyResponse: fillWeChatQR,
	}
	listing := &Listing{}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !listing.answer(w, r) {
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(front.Close)
	return front.URL, listing
}

// fillWeChatQR gives a WeChat Pay PaymentIntent confirmed at its creation
// the QR code Stripe would answer.
func fillWeChatQR(res *http.Response) error {
	req := res.Request
	if req.Method != http.MethodPost || req.URL.Path != "/v1/payment_intents" || res.StatusCode != http.StatusOK ||
		req.Header.Get(wechatHeader) == "" {
		return nil
	}
	var pi map[string]any
	if err := json.NewDecoder(res.Body).Decode(&pi); err != nil {
		return err
	}
	res.Body.Close()
	id, _ := pi["id"].(string)
	data := "weixin://wxpay/bizpayurl?pr=" + id
	pi["status"] = "requires_action"
	pi["next_action"] = map[string]any{"type": "wechat_pay_display_qr_code", "wechat_pay_display_qr_code": map[string]any{
		"data": data, "image_data_url": QRDataURL(data),
		"image_url_png": "https://qr.stripe.com/test_" + id + ".png", "image_url_svg": "https://qr.stripe.com/test_" + id + ".svg",
		"hosted_instructions_url": "https://payments.stripe.com/wechat_pay/qr/test_" + id,
	}}
	body, err := json.Marshal(pi)
	if err != nil {
		return err
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	res.ContentLength = int64(len(body))
	res.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

// wechatHeader marks, on its way to stripe-mock, a request creating a
// confirmed WeChat Pay PaymentIntent (set by the front's Rewrite).
const wechatHeader = "X-Stripetest-Wechat-Qr"

// QRDataURL is the PNG data URL the front answers as the QR code of data:
// a picture of its bytes in black and white squares, not a QR code a phone
// can read (stripe-mock has none to give), but a PNG a page can show.
func QRDataURL(data string) string {
	const n, scale = 21, 4
	sum := sha256.Sum256([]byte(data))
	img := image.NewGray(image.Rect(0, 0, n*scale, n*scale))
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			bit := sum[(y*n+x)/8%len(sum)]>>((y*n+x)%8)&1 == 1
			c := color.Gray{Y: 255}
			if bit {
				c = color.Gray{}
			}
			for dy := 0; dy < scale; dy++ {
				for dx := 0; dx < scale; dx++ {
					img.SetGray(x*scale+dx, y*scale+dy, c)
				}
			}
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
}

// startMock runs stripe-mock and answers its own base URL.
func startMock(t testing.TB) string {
	t.Helper()
	bin := Binary()
	if bin == "" {
		t.Skip("stripe-mock is not installed: go install github.com/stripe/stripe-mock@v0.203.0")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "-http-port", fmt.Sprint(port), "-https-port", "0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("start stripe-mock: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Wait on its word that it listens, not on the clock.
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		said := false
		for sc.Scan() {
			if !said && strings.Contains(sc.Text(), "Listening for HTTP") {
				said = true
				ready <- true
			}
		}
		if !said {
			ready <- false
		}
	}()
	if !<-ready {
		t.Fatal("stripe-mock exited before it listened")
	}
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

// Session is the part of a Checkout Session a webhook event carries.
type Session struct {
	ID            string
	OrderID       int64
	AmountCents   int64
	Currency      string
	PaymentStatus string // paid, unpaid
	PaymentIntent string
	// Listed only (Listing): when it was created and how much of it was refunded.
	Created       time.Time
	RefundedCents int64
}

// Event is a webhook event of type typ about s, as Stripe sends it, and its
// Stripe-Signature header signed at the time at.
func Event(id, typ string, s Session, at time.Time) (payload []byte, signature string) {
	order := fmt.Sprint(s.OrderID)
	status := "complete"
	if typ == "checkout.session.expired" {
		status = "expired"
	}
	body, err := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": typ, "api_version": stripego.APIVersion, "created": at.Unix(),
		"data": map[string]any{"object": map[string]any{
			"id": s.ID, "object": "checkout.session", "mode": "payment", "status": status,
			"payment_status": s.PaymentStatus, "amount_total": s.AmountCents, "currency": s.Currency,
			"client_reference_id": order, "metadata": map[string]string{"order_id": order},
			"payment_intent": s.PaymentIntent,
		}},
	})
	if err != nil {
		panic(err)
	}
	sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: WebhookSecret, Timestamp: at})
	return body, sp.Header
}

// Intent is the part of a PaymentIntent (a WeChat Pay trade) a webhook event carries.
type Intent struct {
	ID          string
	OrderID     int64
	AmountCents int64
	Currency    string
	Status      string // succeeded, canceled, requires_action
	// Listed only (Listing): when it was created and how much of it was refunded.
	Created       time.Time
	RefundedCents int64
}

// IntentEvent is a webhook event of type typ (payment_intent.succeeded…)
// about the PaymentIntent trade in, as Stripe sends it, and its
// Stripe-Signature header signed at the time at.
func IntentEvent(id, typ string, in Intent, at time.Time) (payload []byte, signature string) {
	order := fmt.Sprint(in.OrderID)
	received := int64(0)
	if in.Status == "succeeded" {
		received = in.AmountCents
	}
	body, err := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": typ, "api_version": stripego.APIVersion, "created": at.Unix(),
		"data": map[string]any{"object": map[string]any{
			"id": in.ID, "object": "payment_intent", "status": in.Status, "amount": in.AmountCents, "amount_received": received,
			"currency": in.Currency, "payment_method_types": []string{"wechat_pay"},
			"metadata": map[string]string{"order_id": order, "trade": "payment_intent"},
		}},
	})
	if err != nil {
		panic(err)
	}
	return body, Sign(body, at)
}

// Sign is the Stripe-Signature header of payload signed with WebhookSecret at the time at.
func Sign(payload []byte, at time.Time) string {
	return SignWith(payload, WebhookSecret, at)
}

// SignWith is the Stripe-Signature header of payload signed with secret at the time at.
func SignWith(payload []byte, secret string, at time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: at}).Header
}
