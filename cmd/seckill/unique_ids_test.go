package main

import (
	"fmt"
	"regexp"
	"testing"
	"time"
)

// The slot's page, which holds the slot's form and the form of its new
// goods, gives no two elements one id (a label's for would find the first).
func TestSlotPageIDsAreUnique(t *testing.T) {
	a := startApp(t)
	mt, _ := a.newMerchant()
	sl := a.createSlot(mt, time.Hour, time.Hour)
	for _, lang := range []string{"en", "zh-CN"} {
		st, body := i18nGet(t, a, mt, fmt.Sprintf("/admin/slots/%d", sl.ID), lang)
		if st != 200 {
			t.Fatalf("the slot's page: %d", st)
		}
		seen := map[string]bool{}
		for _, m := range regexp.MustCompile(`\sid="([^"]+)"`).FindAllStringSubmatch(body, -1) {
			if seen[m[1]] {
				t.Errorf("the slot's page in %s has id %q twice", lang, m[1])
			}
			seen[m[1]] = true
		}
		if !seen["f-title"] || !seen["f-goods-title"] {
			t.Errorf("the slot's page in %s lacks the slot's or the goods' title field", lang)
		}
	}
}
