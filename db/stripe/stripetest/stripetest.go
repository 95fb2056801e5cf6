// Package stripetest starts stripe-mock, Stripe's offline stand-in for its
// API, for tests, and signs webhook events as Stripe would.
package stripetest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// Start runs stripe-mock for the test and answers its base URL; the test is
// skipped, saying how to install it, when stripe-mock is not found.
// STRIPE_MOCK_URL names one already running (as .ci/run starts it).
func Start(t testing.TB) string {
	t.Helper()
	if u := os.Getenv("STRIPE_MOCK_URL"); u != "" {
		return u
	}
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
