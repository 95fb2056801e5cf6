package i18n

import (
	"strconv"
	"strings"
)

// The shopper's side around the sale: coupons and reminders, the inbox and
// settings, red packets (the merchant's pages too), the wallet, checkout,
// confirmations and receipts, and signing in.
func init() {
	// A coupon's terms: an amount off reads 满100减20 or 无门槛减5; a percent
	// off reads as the share of the price paid, 15% off as 8.5折.
	addFunc(map[string]func([]string) string{
		"%s off orders of %s or more": func(a []string) string {
			if z, ok := zhe(a[0]); ok {
				return "满" + a[1] + "打" + z + "折"
			}
			return "满" + a[1] + "减" + a[0]
		},
		"%s off any order": func(a []string) string {
			if z, ok := zhe(a[0]); ok {
				return "全场" + z + "折"
			}
			return "无门槛减" + a[0]
		},
		"%s%% off": func(a []string) string {
			if z, ok := zhe(a[0] + "%"); ok {
				return z + "折"
			}
			return "减" + a[0] + "%%"
		},
	})
	add(map[string]string{
		// Paying at the payment provider (the checkout page).
		"Pay by card":             "银行卡支付",
		"Pay with Alipay":         "支付宝支付",
		"Pay with WeChat Pay":     "微信支付",
		"card":                    "银行卡",
		"Alipay":                  "支付宝",
		"WeChat Pay":              "微信支付",
		"Scan with WeChat to pay": "请用微信扫码支付",
		"WeChat Pay QR code":      "微信支付二维码",
		"Open WeChat, tap Scan and scan this code. This page moves on to your receipt once the payment arrives.": "打开微信，点击“扫一扫”扫描此二维码。付款到账后，本页会自动跳转到支付凭证。",
		"Your payment by %s is open at Stripe.":                       "你在 Stripe 的%s付款尚未完成。",
		"Once you have paid, Stripe brings you back to your receipt.": "付款完成后，Stripe 会带你回到支付凭证。",
		"Waiting for your payment…":                                   "正在等待付款…",
		"I have paid":                                                 "我已付款",
	})
	add(map[string]string{
		// Coupon centre, My coupons, My reminders, Inbox, Settings.
		" to grab coupons and book reminders.":   "后即可领券、设置提醒。",
		"No coupons right now. Check back soon.": "暂无可领的优惠券，稍后再来看看。",
		" of %d left":                            " / %d 剩余",
		"%d per person":                          "每人限领 %d 张",
		"valid %d days after grabbing":           "领取后 %d 天内有效",
		"Opens in":                               "距开抢",
		"Ends in":                                "距结束",
		"You have no coupons yet.":               "你还没有优惠券。",
		"Grab one":                               "去领券中心领一张",
		". A coupon you just grabbed shows here within a second or two.": "。刚领到的优惠券一两秒内就会显示在这里。",
		"Coupon":      "优惠券",
		"Valid until": "有效期至",
		"on order %s": "用于订单 %s",
		"Unused":      "未使用",
		"Used":        "已使用",
		"No reminders booked. Open a coupon in the %s and choose “Remind me”, or do the same on an upcoming %s.": "还没有设置提醒。在%s打开一张优惠券，点“提醒我”；也可以在即将开抢的%s页面上这样设置。",
		"coupon centre": "领券中心",
		"seckill goods": "秒杀商品",
		"Reminder for":  "提醒内容",
		"Remind at":     "提醒时间",
		"Mark all read": "全部标为已读",
		"Nothing here yet. Reminders you book for the app arrive here.": "暂无消息。你设置的站内提醒会发到这里。",
		"See the goods":       "查看商品",
		"Email for reminders": "接收提醒的邮箱",
		"Webhook URL":         "回调地址",
		"Each reminder is sent there as a signed message your service can check (the operators’ guide says how). Leave a field empty to stop that channel.": "每条提醒都会以带签名的消息发送到这里，你的服务可以校验签名（方法见运维指南）。留空即停用该提醒方式。",
		"Current password": "当前密码",
		"New password":     "新密码",
		"At least 8 characters. Changing it signs you out on every other device.": "至少 8 个字符。修改后，其他设备上的登录都会退出。",
		"Change password": "修改密码",
		"Webhook":         "回调通知",
		"SMS":             "短信",

		// The reminder picker, on coupons and seckill goods.
		"Sale reminder":  "开售提醒",
		"Set a reminder": "设置提醒",
		" to get a reminder before the sale starts.":          "后可在开售前收到提醒。",
		"No reminder can be set any more: it opens too soon.": "已来不及设置提醒：马上就要开始了。",
		"Before the start": "开始前",
		"Send by":          "提醒方式",
		"Your reminders":   "已设提醒",
		"Reminders %d minutes or more before the start are too late: it opens sooner than that.": "距开始已不到 %[1]d 分钟，提前 %[1]d 分钟或更早的提醒来不及了。",
		"Not offered here: %s (%s)":                                       "此处不可用：%s（%s）",
		"seckill goods remind you in the app only":                        "秒杀商品只提供站内提醒",
		"set your email address in settings first":                        "请先在设置中填写邮箱",
		"set your webhook URL in settings first":                          "请先在设置中填写回调地址",
		"Email reminders are not available: no mail server is configured": "邮件提醒不可用：未配置邮件服务器",
		"SMS reminders are not available: no provider is configured":      "短信提醒不可用：未配置服务商",
		"WeChat reminders are not available: no provider is configured":   "微信提醒不可用：未配置服务商",

		// Red packets.
		"No red packets right now. Come back soon.": "暂无红包，稍后再来看看。",
		"Opened · you got %s":                       "已拆开 · 你抢到了 %s",
		"%s in %d random shares":                    "%s，共 %d 份，拼手气",
		"%s in %d equal shares":                     "%s，共 %d 份，金额相同",
		"left":                                      "份未领",
		"You got":                                   "你抢到了",
		"Log in to open":                            "登录后拆红包",
		"Open the red packet":                       "拆红包",
		"Open":                                      "拆",
		"Tap to open":                               "点击拆开",
		"Grabs":                                     "领取记录",
		"New red packet":                            "发红包",
		"Total (¥)":                                 "总金额（¥）",
		"Shares":                                    "份数",
		"Split":                                     "分配方式",
		"Random":                                    "拼手气",
		"Fixed (equal)":                             "普通（金额相同）",
		"random":                                    "拼手气",
		"fixed":                                     "金额相同",
		"Expires in":                                "有效期",
		"1 hour":                                    "1 小时",
		"6 hours":                                   "6 小时",
		"24 hours":                                  "24 小时",
		"3 days":                                    "3 天",
		"7 days":                                    "7 天",
		"At a date and time…":                       "指定日期和时间…",
		"Date and time (when “At a date and time” is chosen)": "日期和时间（选择“指定日期和时间”时）",
		"Create red packet":         "发红包",
		"Your packets":              "我发的红包",
		"None yet.":                 "暂无。",
		"Left":                      "剩余",
		"Expires":                   "到期时间",
		"Active":                    "进行中",
		"expires":                   "到期",
		"shopper page":              "顾客页面",
		"who got one (search, CSV)": "领取名单（搜索、CSV）",
		"Claimed":                   "已领",

		// My wallet.
		"You got, in all":   "累计抢到",
		"Nothing yet.":      "还没有。",
		"Open a red packet": "去拆红包",
		"No coupons yet.":   "还没有优惠券。",
		"until":             "有效期至",

		// Checkout, confirmations, the receipt.
		"Checkout":                          "结算",
		"Amount":                            "金额",
		"by":                                "截止",
		"No coupon":                         "不使用优惠券",
		"Needs a spend of %s":               "需满 %s 可用",
		"Used already":                      "已使用过",
		"valid until":                       "有效期至",
		"You have no coupons.":              "你没有优惠券。",
		"in the coupon centre.":             "",
		"Discount":                          "优惠",
		"(−%s with a coupon)":               "（优惠券抵扣 −%s）",
		"on":                                "于",
		"This order can no longer be paid.": "该订单已无法支付。",
		"Refund order %s for %s?":           "确定为订单 %s 退款 %s 吗？",
		"%s. The money goes back to you; a coupon used on it comes back if it is still valid. This cannot be undone.": "%s。款项将退还给你；使用的优惠券如仍在有效期内会退回。此操作无法撤销。",
		". The money goes back to you; a coupon used on it comes back if it is still valid. This cannot be undone.":   "款项将退还给你；使用的优惠券如仍在有效期内会退回。此操作无法撤销。",
		". The unit goes back on sale for others; this cannot be undone.":                                             "该商品将重新开放给其他人抢购；此操作无法撤销。",
		"Receipt %s":              "支付凭证 %s",
		"Grabs · %s":              "领取记录 · %s",
		"Refund %s":               "退款 %s",
		"Keep it":                 "暂不",
		"Cancel this order?":      "确定取消订单吗？",
		"Cancel order %s for %s?": "确定取消订单 %s（%s）吗？",
		"%s. The unit goes back on sale for others; this cannot be undone.": "%s。该商品将重新开放给其他人抢购；此操作无法撤销。",
		"Cancel the order":          "取消订单",
		"End this sale now?":        "立即结束本场销售？",
		"End the sale of “%s” now?": "立即结束“%s”的销售吗？",
		"Shoppers can no longer grab this goods; the sale cannot be started again.": "顾客将无法再抢购该商品；销售结束后不能重新开始。",
		"Shoppers can no longer grab this slot; the sale cannot be started again.":  "顾客将无法再抢购该场次；销售结束后不能重新开始。",
		"Keep it on sale":                  "继续销售",
		"Thank you, it is yours":           "抢到啦，感谢购买",
		"Payment received.":                "支付成功。",
		"Item":                             "商品",
		"Paid with":                        "支付方式",
		"In the app, with the coupon “%s”": "站内支付，使用优惠券“%s”",
		"In the app, no coupon":            "站内支付，未使用优惠券",
		"Keep shopping":                    "继续逛逛",

		// Log in, sign up, lockout.
		"Create an account":                      "注册账号",
		"New here?":                              "新用户？",
		"3–32 letters, digits or underscores.":   "3–32 个字母、数字或下划线。",
		"At least 8 characters.":                 "至少 8 个字符。",
		"Have an account?":                       "已有账号？",
		"Too many failed attempts. Try again in": "失败次数过多，请在",
		"s.":                                     "秒后重试。",
	})
	addJS(map[string]string{
		"In app":                                    "站内",
		"Remind me":                                 "提醒我",
		"%d min before":                             "提前 %d 分钟",
		"at":                                        "于",
		"Could not change the reminder.":            "提醒修改失败。",
		"Choose at least one channel.":              "请至少选择一种提醒方式。",
		"Got it! Valid until %s.":                   "领到啦！有效期至 %s。",
		"See my coupons":                            "查看我的优惠券",
		"Something went wrong. Try again.":          "出错了，请重试。",
		"Something went wrong — try again.":         "出错了，请重试。",
		"luckiest":                                  "手气最佳",
		"Nobody has opened it yet.":                 "还没有人拆开。",
		"Too late: all shares are gone.":            "来晚了，红包已被抢光。",
		"This packet has expired.":                  "该红包已过期。",
		"All shares are gone.":                      "红包已被抢光。",
		"You have already opened this packet.":      "你已经拆过这个红包了。",
		"needs the date and time it expires":        "请填写到期的日期和时间",
		"must be a date and time in the future":     "必须是将来的日期和时间",
		"must be within 30 days from now":           "必须在 30 天以内",
		"must be a duration such as 30m or 24h":     "请填写时长，如 30m 或 24h",
		"must be between 1s and 720h0m0s":           "必须在 1 秒到 720 小时之间",
		"Each share: %s":                            "每份：%s",
		"Average share: %s":                         "平均每份：%s",
		"This coupon has been used already.":        "该优惠券已被使用。",
		"Too late: this has expired.":               "来晚了，已过期。",
		"This coupon does not apply to this order.": "该优惠券不适用于此订单。",
		"That coupon is not yours.":                 "这张优惠券不属于你。",
		"Pay %s":                                    "支付 %s",
		"You can try again now.":                    "现在可以重试了。",
	})
}

// zhe is a percent off ("15%") as 折, the tenths of the price paid
// ("8.5"); not ok for anything else (an amount, a verb of a format).
func zhe(off string) (string, bool) {
	p, err := strconv.ParseFloat(strings.TrimSuffix(off, "%"), 64)
	if !strings.HasSuffix(off, "%") || err != nil || p <= 0 || p >= 100 {
		return "", false
	}
	return strconv.FormatFloat((100-p)/10, 'f', -1, 64), true
}
