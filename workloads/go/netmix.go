// netmix.go: the netmix workload, mirroring workloads/netmix/netmix.cpp.
//
// conns goroutines, each with a TCP connection to schedlab's echo server on 127.0.0.1:port
// (the C++ workload's prepare() starts it, outside this process, and passes its port with
// --port). Each runs requests rounds of: countUp(iters), write a request-bytes request whose
// byte j is (c*131 + r*31 + j*7) mod 251 for connection c and request r (netmix_request_byte in
// netmix.hpp), read the whole reply and compare it with the request byte for byte. A
// sync.WaitGroup joins them. Every read and write goes through Go's net package, so a
// goroutine waiting for a reply parks on Go's own network poller (netpoll_epoll.go) and its
// thread runs other goroutines: the runtime schedlab's poller follows. net.Dial sets TCP_NODELAY,
// as the C++ side does. server-delay-us is the server's business, accepted and unused here.
//
// --load open: the roles turn around (workloads/netmix/load_generator.hpp). The port is the C++
// workload's load generator's; each goroutine dials it and serves: requests times, read a
// request whole, countUp(iters), write it back. The generator sends on its own schedule (rate,
// arrivals and seed are its business, accepted and unused here), measures every request's
// latency and checks every reply; the harness reads both from it after this program's run.

package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

type netmixWorkload struct {
	conns, requests, iters, requestBytes, port uint64
	open                                       bool // --load open: serve the generator's requests

	replies, increments atomic.Uint64
	errs                []error // per connection: what failed
}

func netmixRequestByte(c, r, j uint64) byte { return byte((c*131 + r*31 + j*7) % 251) }

func (w *netmixWorkload) name(c uint64) string {
	return fmt.Sprintf("netmix connection %d of %d", c+1, w.conns)
}

// dial connects connection c to the port on 127.0.0.1; its error names the connection.
func (w *netmixWorkload) dial(c uint64) (net.Conn, string, error) {
	addr := fmt.Sprintf("127.0.0.1:%d", w.port)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, addr, fmt.Errorf("%s: cannot connect to %s: %v", w.name(c), addr, err)
	}
	return conn, addr, nil
}

// connection is one connection's life; its error names the connection and the system's error.
func (w *netmixWorkload) connection(c uint64) error {
	conn, addr, err := w.dial(c)
	if err != nil {
		return err
	}
	defer conn.Close()
	request := make([]byte, w.requestBytes)
	reply := make([]byte, w.requestBytes)
	var done, verified uint64
	for r := uint64(0); r < w.requests; r++ {
		done += countUp(w.iters)
		for j := range request {
			request[j] = netmixRequestByte(c, r, uint64(j))
		}
		if _, err := conn.Write(request); err != nil {
			return fmt.Errorf("%s: cannot send request %d to %s: %v", w.name(c), r+1, addr, err)
		}
		if _, err := io.ReadFull(conn, reply); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("%s: the server at %s closed the connection after %d of %d replies",
					w.name(c), addr, r, w.requests)
			}
			return fmt.Errorf("%s: cannot read reply %d from %s: %v", w.name(c), r+1, addr, err)
		}
		if !bytes.Equal(reply, request) {
			j := 0
			for reply[j] == request[j] {
				j++
			}
			return fmt.Errorf("%s: reply %d differs from its request at byte %d (got 0x%02x, sent 0x%02x)",
				w.name(c), r+1, j, reply[j], request[j])
		}
		verified++
	}
	w.replies.Add(verified)
	w.increments.Add(done)
	return nil
}

// serve is one connection of the open loop: the server's side, as its goroutine.
func (w *netmixWorkload) serve(c uint64) error {
	conn, addr, err := w.dial(c)
	if err != nil {
		return err
	}
	defer conn.Close()
	request := make([]byte, w.requestBytes)
	var done, served uint64
	for r := uint64(0); r < w.requests; r++ {
		if _, err := io.ReadFull(conn, request); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("%s: the load generator at %s closed the connection after %d of %d requests",
					w.name(c), addr, r, w.requests)
			}
			return fmt.Errorf("%s: cannot read request %d from %s: %v", w.name(c), r+1, addr, err)
		}
		done += countUp(w.iters)
		if _, err := conn.Write(request); err != nil {
			return fmt.Errorf("%s: cannot send reply %d to %s: %v", w.name(c), r+1, addr, err)
		}
		served++
	}
	w.replies.Add(served)
	w.increments.Add(done)
	return nil
}

func (w *netmixWorkload) run() {
	w.replies.Store(0)
	w.increments.Store(0)
	var wg sync.WaitGroup
	wg.Add(int(w.conns))
	for c := uint64(0); c < w.conns; c++ {
		go func(c uint64) {
			defer wg.Done()
			if w.open {
				w.errs[c] = w.serve(c)
			} else {
				w.errs[c] = w.connection(c)
			}
		}(c)
	}
	wg.Wait()
}

func (w *netmixWorkload) check() error {
	for _, err := range w.errs {
		if err != nil {
			return err
		}
	}
	if got, want := w.replies.Load(), w.conns*w.requests; got != want {
		return fmt.Errorf("netmix verified or served %d requests, expected %d", got, want)
	}
	if got, want := w.increments.Load(), w.conns*w.requests*w.iters; got != want {
		return fmt.Errorf("netmix counted %d increments, expected %d", got, want)
	}
	return nil
}

func (w *netmixWorkload) goroutinesPerRun() uint64 { return w.conns }

func newNetmix(flags *flag.FlagSet) func() (workload, error) {
	conns := flags.Uint64("conns", 64, "connections, one goroutine each")
	requests := flags.Uint64("requests", 100, "requests per connection")
	iters := flags.Uint64("iters", 20000, "loop iterations before each request")
	requestBytes := flags.Uint64("request-bytes", 64, "bytes per request (the server echoes them)")
	port := flags.Uint64("port", 0, "the echo server's port on 127.0.0.1")
	// The server applies the delay, the generator the schedule; schedlab passes every netmix
	// parameter.
	flags.Uint64("server-delay-us", 0, "the server's delay per reply (unused here)")
	load := flags.String("load", "closed", "closed: a client of the echo server; open: a server of the load generator")
	flags.Uint64("rate", 0, "the generator's requests per second (unused here)")
	flags.String("arrivals", "fixed", "the generator's schedule (unused here)")
	flags.Uint64("seed", 0, "the generator's seed (unused here)")
	return func() (workload, error) {
		if *load != "closed" && *load != "open" {
			return nil, fmt.Errorf("--load %q: use closed or open", *load)
		}
		if *conns == 0 {
			return nil, fmt.Errorf("--conns 0: netmix needs at least one connection")
		}
		if *requestBytes == 0 {
			return nil, fmt.Errorf("--request-bytes 0: a request needs at least one byte")
		}
		if *port == 0 || *port > 65535 {
			return nil, fmt.Errorf("no --port: give the port of schedlab's netmix echo server on 127.0.0.1")
		}
		return &netmixWorkload{conns: *conns, requests: *requests, iters: *iters, requestBytes: *requestBytes,
			port: *port, open: *load == "open", errs: make([]error, *conns)}, nil
	}
}
