package app

import (
	"strings"
	"testing"
)

// The provider's settings are checked at start: each bad value is named,
// and a key without its webhook secret (or the reverse) does not start.
func TestConfigPaymentsRefusesBadValues(t *testing.T) {
	ok := map[string]string{"STRIPE_SECRET_KEY": "sk_test_123", "STRIPE_WEBHOOK_SECRET": "whsec_abc"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range ok {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{env: with("STRIPE_SECRET_KEY", "pk_test_123"), want: "STRIPE_SECRET_KEY"},
		{env: map[string]string{"STRIPE_SECRET_KEY": "sk_test_123"}, want: "STRIPE_WEBHOOK_SECRET must be set"},
		{env: map[string]string{"STRIPE_WEBHOOK_SECRET": "whsec_abc"}, want: "without STRIPE_SECRET_KEY"},
		{env: with("STRIPE_WEBHOOK_SECRET", "secret"), want: "whsec_"},
		{env: with("STRIPE_WEBHOOK_SECRET", "whsec_new,secret"), want: "the new and the old one"},
		{env: with("STRIPE_WEBHOOK_SECRET", "whsec_a,whsec_b,whsec_c"), want: "the new and the old one"},
		{env: map[string]string{"STRIPE_API_BASE": "http://localhost:12111"}, want: "STRIPE_API_BASE is set without"},
		{env: with("STRIPE_API_BASE", "localhost:12111"), want: "STRIPE_API_BASE"},
		{env: with("STRIPE_API_BASE", "http://localhost:12111/v1"), want: "without a path"},
		{env: with("PAYMENT_METHODS", "card,paypal"), want: `"paypal" is not one of`},
		{env: with("PAYMENT_METHODS", "card,card"), want: "card twice"},
		{env: with("PAYMENT_METHODS", " , "), want: "at least one"},
		{env: with("PAYMENT_CURRENCY", "CNY"), want: "PAYMENT_CURRENCY"},
		{env: with("PAYMENT_CURRENCY", "yuan"), want: "PAYMENT_CURRENCY"},
		{env: with("PAYMENT_CURRENCY", "brl"), want: "alipay does not take PAYMENT_CURRENCY=brl"},
	} {
		_, err := ParseConfig(nil, env(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("env %v: got %v, want an error mentioning %q", tc.env, err, tc.want)
		}
	}
}

// Unset, the provider is off and the defaults are the contract's; set, each value is kept.
func TestConfigPaymentsDefaultsAndValues(t *testing.T) {
	c, err := ParseConfig(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.StripeSecretKey != "" || c.PaymentCurrency != "cny" || strings.Join(c.Methods(), ",") != "card,alipay,wechat_pay" {
		t.Fatalf("defaults: key %q, currency %q, methods %v", c.StripeSecretKey, c.PaymentCurrency, c.Methods())
	}
	if _, err := ParseConfig(nil, env(map[string]string{"STRIPE_SECRET_KEY": "sk_test_123", "STRIPE_WEBHOOK_SECRET": "whsec_new, whsec_old"})); err != nil {
		t.Fatalf("two secrets while rotating: %v", err)
	}
	c, err = ParseConfig([]string{"-payment-currency", "usd"}, env(map[string]string{
		"STRIPE_SECRET_KEY": "sk_test_123", "STRIPE_WEBHOOK_SECRET": "whsec_abc", "STRIPE_API_BASE": "http://127.0.0.1:12111",
		"PAYMENT_METHODS": "card, wechat_pay", "PAYMENT_CURRENCY": "eur",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.StripeSecretKey != "sk_test_123" || c.StripeWebhookSecret != "whsec_abc" || c.StripeAPIBase != "http://127.0.0.1:12111" ||
		c.PaymentCurrency != "usd" || strings.Join(c.Methods(), ",") != "card,wechat_pay" {
		t.Fatalf("values (flags over env): %+v", c)
	}
}
