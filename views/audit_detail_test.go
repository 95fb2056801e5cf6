package views

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/views/i18n"
)

// An audit entry's detail reads in the reader's words and units: money in
// yuan whether a form sent it as typed or the API in cents, a form's time
// read in the browser's zone (tz_offset, which is not shown), choices and
// yes or no in words, empty fields left out; every name and word Chinese
// on the Chinese page.
func TestAuditDetailInReadersWords(t *testing.T) {
	form := `{"title":"Tea pot","price_cents":"299","seckill_price_cents":"9.9","mode":"first_come","start_at":"2026-12-06T10:00","tz_offset":"-480","description":"","rehearsal":"true","pow_bits":"0"}`
	api := `{"kind":"percent_off","value":15,"min_spend_cents":10000,"grab_start_at":"2026-12-06T02:00:00Z","valid_days":7}`
	at := time.Date(2026, 12, 6, 2, 0, 0, 0, time.UTC)
	show := func(fs []DetailField) []string {
		var out []string
		for _, f := range fs {
			v := f.Value
			if f.At != nil {
				v = f.At.UTC().Format(time.RFC3339)
			}
			out = append(out, f.Name+": "+v)
		}
		return out
	}
	for _, c := range []struct {
		lang   i18n.Lang
		detail string
		want   []string
	}{
		{i18n.En, form, []string{"Title: Tea pot", "Sale mode: First come, first served", "List price: ¥299.00", "Seckill price: ¥9.90",
			"Starts: " + at.Format(time.RFC3339), "Anti-bot check difficulty: 0", "Rehearsal: Yes"}},
		{i18n.Zh, form, []string{"标题: Tea pot", "销售方式: 先到先得", "原价: ¥299.00", "秒杀价: ¥9.90",
			"开始时间: " + at.Format(time.RFC3339), "防刷验证难度: 0", "演练: 是"}},
		{i18n.En, api, []string{"Kind: Percent off", "Value: 15% off", "Minimum spend: ¥100.00", "Grabs open: " + at.Format(time.RFC3339), "Valid days after grab: 7"}},
		{i18n.Zh, api, []string{"类型: 折扣", "面额: 8.5折", "最低消费: ¥100.00", "开抢时间: " + at.Format(time.RFC3339), "领取后有效天数: 7"}},
	} {
		ctx := i18n.With(context.Background(), c.lang)
		got := show(AuditRow{Detail: c.detail}.DetailFields(ctx))
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s detail of %s:\n got %q\nwant %q", c.lang, c.detail, got, c.want)
		}
		if c.lang == i18n.Zh {
			for _, f := range got {
				name, _, _ := strings.Cut(f, ":")
				if strings.ContainsFunc(name, func(r rune) bool { return r < 0x80 && r != ' ' }) {
					t.Errorf("an English name on the Chinese page: %q", f)
				}
			}
		}
	}
}
