package scenarios

// The crowd's live sockets: a second process (seckill bench-crowd-sockets)
// holds them, so neither this process's open files nor its CPU pay for the
// client side of ten thousand sockets. It opens them, subscribes each to the
// topics it is told (as static/app.js does for a page's data-live-topic
// sections), answers the server's pings, and notes when each stock event of
// the probe goods reached each socket, by the wall clock both processes share.
//
// Its conversation with the bench, a line each way:
//
//	child:  connected OPEN FAILED
//	bench:  sub PROBE_GOODS_ID TOPIC...   child: ready ACKED WANTED
//	bench:  dump                          child: e SOCKET REMAINING UNIX_NS ... end OPEN DROPPED EVENTS
//
// It exits when its standard input closes (the bench is done or gone).

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const crowdSocketsMode = "bench-crowd-sockets"

// crowdSocketBase numbers the live sockets' client addresses apart from the shoppers'.
const crowdSocketBase = 1 << 21

// The child mode runs before main (or a test binary's TestMain), from the
// binary the bench starts again: any binary that links this package (seckill,
// the test binaries of cmd/seckill and of this package).
func init() {
	if len(os.Args) > 1 && os.Args[1] == crowdSocketsMode {
		if err := crowdSocketsChild(os.Args[2:], os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "seckill "+crowdSocketsMode+":", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// liveSocket is one of the child's sockets.
type liveSocket struct {
	c      net.Conn
	br     *bufio.Reader
	wmu    sync.Mutex
	mu     sync.Mutex
	events []probeArrival // the probe goods' stock events, in arrival order
	acks   atomic.Int32
	closed atomic.Bool
}

type probeArrival struct{ remaining, at int64 }

func crowdSocketsChild(args []string, in io.Reader, out io.Writer) error {
	u, n, err := childArgs(crowdSocketsMode+" WS_URL N", args)
	if err != nil {
		return err
	}
	cmds := make(chan []string)
	go func() { // the bench's lines; their end is the end of the child
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			cmds <- strings.Fields(sc.Text())
		}
		os.Exit(0)
	}()
	all := make([]*liveSocket, n)
	var next, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				s, err := dialLiveSocket(u, shopperAddr(crowdSocketBase+i))
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				all[i] = s
			}
		}()
	}
	wg.Wait()
	socks := make([]*liveSocket, 0, n)
	for _, s := range all {
		if s != nil {
			socks = append(socks, s)
		}
	}
	if e := firstErr.Load(); e != nil {
		fmt.Fprintf(os.Stderr, "%s: %d sockets failed to open, the first: %s\n", crowdSocketsMode, failed.Load(), e)
	}
	var probe, events atomic.Int64
	for _, s := range socks {
		go s.read(&probe, &events)
	}
	fmt.Fprintf(out, "connected %d %d\n", len(socks), failed.Load())
	for f := range cmds {
		switch {
		case len(f) >= 3 && f[0] == "sub":
			id, _ := strconv.ParseInt(f[1], 10, 64)
			probe.Store(id)
			acked, want := subscribeAll(socks, f[2:])
			fmt.Fprintf(out, "ready %d %d\n", acked, want)
		case len(f) == 1 && f[0] == "dump":
			w := bufio.NewWriterSize(out, 1<<16)
			dropped := 0
			for i, s := range socks {
				if s.closed.Load() {
					dropped++
				}
				s.mu.Lock()
				for _, e := range s.events {
					fmt.Fprintf(w, "e %d %d %d\n", i, e.remaining, e.at)
				}
				s.mu.Unlock()
			}
			fmt.Fprintf(w, "end %d %d %d\n", len(socks), dropped, events.Load())
			w.Flush()
		}
	}
	return nil
}

// subscribeAll subscribes every socket to topics and waits (a minute at
// most) until the server has acknowledged each subscription.
func subscribeAll(socks []*liveSocket, topics []string) (acked, want int) {
	base := make([]int32, len(socks))
	for i, s := range socks {
		base[i] = s.acks.Load()
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(socks); i = int(next.Add(1) - 1) {
				for _, t := range topics {
					socks[i].write(0x1, []byte(`{"op":"subscribe","topic":"`+t+`"}`))
				}
			}
		}()
	}
	wg.Wait()
	want = len(socks) * len(topics)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		acked = 0
		for i, s := range socks {
			acked += int(s.acks.Load() - base[i])
		}
		if acked >= want || time.Now().After(deadline) {
			return acked, want
		}
	}
}

// dialLiveSocket opens a WebSocket with a hand-written handshake from the
// client address from (forwarded as a proxy would).
func dialLiveSocket(u *url.URL, from string) (*liveSocket, error) {
	c, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: http://%s\r\n%s\r\n",
		u.RequestURI(), u.Host, u.Host, forwardedFor(from))
	br := bufio.NewReaderSize(c, 1024)
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, " 101 ") {
		c.Close()
		return nil, fmt.Errorf("handshake: %q %v", status, err)
	}
	for { // the headers, up to the blank line; frames follow in br
		line, err := br.ReadString('\n')
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("handshake: %v", err)
		}
		if strings.TrimRight(line, "\r\n") == "" {
			break
		}
	}
	c.SetDeadline(time.Time{})
	return &liveSocket{c: c, br: br}, nil
}

// write sends one masked frame (the zero mask: the payload goes as it is).
func (s *liveSocket) write(op byte, payload []byte) {
	f := make([]byte, 0, len(payload)+14)
	f = append(f, 0x80|op)
	switch n := len(payload); {
	case n < 126:
		f = append(f, 0x80|byte(n))
	case n < 1<<16:
		f = append(f, 0x80|126, byte(n>>8), byte(n))
	default:
		f = append(f, 0x80|127)
		f = binary.BigEndian.AppendUint64(f, uint64(n))
	}
	f = append(append(f, 0, 0, 0, 0), payload...)
	s.wmu.Lock()
	s.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := s.c.Write(f)
	s.wmu.Unlock()
	if err != nil {
		s.closed.Store(true)
	}
}

// read reads the server's frames until the socket closes: pings are
// answered, subscriptions counted, and the probe goods' stock events noted
// with their arrival time.
func (s *liveSocket) read(probe, events *atomic.Int64) {
	defer s.closed.Store(true)
	var hdr [8]byte
	var payload []byte
	for {
		if _, err := io.ReadFull(s.br, hdr[:2]); err != nil {
			return
		}
		op, masked, n := hdr[0]&0x0f, hdr[1]&0x80 != 0, uint64(hdr[1]&0x7f)
		switch n {
		case 126:
			if _, err := io.ReadFull(s.br, hdr[:2]); err != nil {
				return
			}
			n = uint64(binary.BigEndian.Uint16(hdr[:2]))
		case 127:
			if _, err := io.ReadFull(s.br, hdr[:8]); err != nil {
				return
			}
			n = binary.BigEndian.Uint64(hdr[:8])
		}
		var mask [4]byte
		if masked {
			if _, err := io.ReadFull(s.br, mask[:]); err != nil {
				return
			}
		}
		if n > 1<<20 {
			return
		}
		payload = append(payload[:0], make([]byte, n)...)
		if _, err := io.ReadFull(s.br, payload); err != nil {
			return
		}
		at := time.Now().UnixNano()
		if masked {
			for i := range payload {
				payload[i] ^= mask[i%4]
			}
		}
		switch op {
		case 0x8:
			s.c.Close()
			return
		case 0x9:
			s.write(0xA, payload)
		case 0x0, 0x1:
			s.text(payload, at, probe.Load(), events)
		}
	}
}

var (
	subscribedType = []byte(`"type":"subscribed"`)
	stockType      = []byte(`"type":"stock"`)
)

func (s *liveSocket) text(p []byte, at, probe int64, events *atomic.Int64) {
	if bytes.Contains(p, subscribedType) {
		s.acks.Add(1)
		return
	}
	events.Add(1)
	if probe == 0 || !bytes.Contains(p, stockType) {
		return
	}
	if g, ok := jsonInt(p, `"goods_id":`); !ok || g != probe {
		return
	}
	if r, ok := jsonInt(p, `"remaining":`); ok {
		s.mu.Lock()
		s.events = append(s.events, probeArrival{remaining: r, at: at})
		s.mu.Unlock()
	}
}

// jsonInt reads the integer after key in a compact JSON object.
func jsonInt(p []byte, key string) (int64, bool) {
	i := bytes.Index(p, []byte(key))
	if i < 0 {
		return 0, false
	}
	rest := p[i+len(key):]
	j := 0
	for j < len(rest) && (rest[j] == '-' || rest[j] >= '0' && rest[j] <= '9') {
		j++
	}
	v, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	return v, err == nil
}

// liveCrowd is the bench's side of the child process.
type liveCrowd struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan string
	open   int
	failed int
}

// startLiveCrowd starts the child and waits (five minutes at most) until it
// has opened its n sockets to base's /ws.
func startLiveCrowd(base string, n int) (*liveCrowd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	l := &liveCrowd{cmd: exec.Command(self, crowdSocketsMode, WSURL(base), strconv.Itoa(n)), lines: make(chan string, 1024)}
	l.cmd.Stderr = os.Stderr
	if l.in, err = l.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := l.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := l.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			l.lines <- sc.Text()
		}
		close(l.lines)
	}()
	f, err := l.expect("connected", 5*time.Minute)
	if err != nil {
		l.close()
		return nil, err
	}
	l.open, _ = strconv.Atoi(f[1])
	l.failed, _ = strconv.Atoi(f[2])
	return l, nil
}

// expect waits for the child's next line, which must start with word.
func (l *liveCrowd) expect(word string, within time.Duration) ([]string, error) {
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case line, ok := <-l.lines:
		f := strings.Fields(line)
		if !ok || len(f) < 3 || f[0] != word {
			return nil, fmt.Errorf("live sockets: want %q, the child said %q", word, line)
		}
		return f, nil
	case <-timer.C:
		return nil, fmt.Errorf("live sockets: no %q within %s", word, within)
	}
}

// subscribe has every socket follow topics; probe names the goods whose stock events are timed.
func (l *liveCrowd) subscribe(probe int64, topics []string) (acked, want int, err error) {
	if _, err := fmt.Fprintf(l.in, "sub %d %s\n", probe, strings.Join(topics, " ")); err != nil {
		return 0, 0, err
	}
	f, err := l.expect("ready", 2*time.Minute)
	if err != nil {
		return 0, 0, err
	}
	acked, _ = strconv.Atoi(f[1])
	want, _ = strconv.Atoi(f[2])
	return acked, want, nil
}

// dump fetches the probe goods' stock events each socket received, by
// socket, and the count of sockets the server closed.
func (l *liveCrowd) dump() (arrivals [][]probeArrival, dropped, events int, err error) {
	if _, err := fmt.Fprintln(l.in, "dump"); err != nil {
		return nil, 0, 0, err
	}
	arrivals = make([][]probeArrival, l.open)
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-l.lines:
			if !ok {
				return nil, 0, 0, fmt.Errorf("live sockets: the child ended during the dump")
			}
			f := strings.Fields(line)
			if len(f) == 4 && f[0] == "e" {
				i, _ := strconv.Atoi(f[1])
				rem, _ := strconv.ParseInt(f[2], 10, 64)
				at, _ := strconv.ParseInt(f[3], 10, 64)
				if i >= 0 && i < len(arrivals) {
					arrivals[i] = append(arrivals[i], probeArrival{remaining: rem, at: at})
				}
			} else if len(f) == 4 && f[0] == "end" {
				dropped, _ = strconv.Atoi(f[2])
				events, _ = strconv.Atoi(f[3])
				return arrivals, dropped, events, nil
			}
		case <-timer.C:
			return nil, 0, 0, fmt.Errorf("live sockets: the dump took over a minute")
		}
	}
}

// close ends the child: its input closes (it exits), and after 5 s it is killed.
func (l *liveCrowd) close() {
	go func() { // lines nobody waits for any more, up to the child's end
		for range l.lines {
		}
	}()
	l.in.Close()
	done := make(chan struct{})
	go func() { l.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		l.cmd.Process.Kill()
		<-done
	}
}
