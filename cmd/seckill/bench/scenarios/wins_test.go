package scenarios

import "testing"

// INFO cpu, commandstats and memory are read into CPU µs, per-command calls
// and µs, and used memory; differences of two readings are per command.
func TestParseRedisStats(t *testing.T) {
	a := parseRedisStats("# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\nused_cpu_sys_children:9.0\r\n" +
		"# Commandstats\r\ncmdstat_evalsha:calls=10,usec=200,usec_per_call=20.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_publish:calls=4,usec=2,usec_per_call=0.50,rejected_calls=0,failed_calls=0\r\n" +
		"# Memory\r\nused_memory:1048576\r\nused_memory_human:1.00M\r\nused_memory_rss:9999999\r\n")
	if a.cpuUS != 3_750_000 || a.cmds["evalsha"] != [2]float64{10, 200} || a.cmds["publish"] != [2]float64{4, 2} || a.memBytes != 1<<20 {
		t.Fatalf("parsed %+v", a)
	}
	b := parseRedisStats("used_cpu_sys:1.0\r\nused_cpu_user:2.0\r\ncmdstat_evalsha:calls=4,usec=50\r\nused_memory:1000000\r\n")
	d := a.minus(b)
	if d.cpuUS != 750_000 || d.cmds["evalsha"] != [2]float64{6, 150} || d.cmds["publish"] != [2]float64{4, 2} || d.memBytes != 48_576 {
		t.Fatalf("difference %+v", d)
	}
}
