package i18n

// The layout, the error pages and the words every page shares.
func init() {
	add(map[string]string{
		"Seckill":                              "秒杀",
		"Red packets":                          "红包",
		"Coupons":                              "优惠券",
		"My orders":                            "我的订单",
		"My coupons":                           "我的优惠券",
		"My wallet":                            "我的钱包",
		"Inbox":                                "消息",
		"Merchant":                             "商家后台",
		"Log out":                              "退出",
		"Log in":                               "登录",
		"Sign up":                              "注册",
		"Menu":                                 "菜单",
		"Language":                             "语言",
		"Steering switches are set:":           "已设置运营开关：",
		"Change them":                          "修改开关",
		"seckill · flash sales that push live": "seckill · 实时推送的限时秒杀",
		"Not found":                            "页面不存在",
		"Not allowed":                          "无权访问",
		"Too many requests":                    "请求过于频繁",
		"Something went wrong":                 "出错了",
		"That did not work":                    "操作未成功",
		"Welcome back, %s.":                    "欢迎回来，%s。",
	})
}
