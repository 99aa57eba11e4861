// The cold-load peer for make bench (issue 9 §2): kube-proxy's IPVS cold load through the
// library kube-proxy and kube-router use (moby/ipvs, Debian's golang-github-docker-docker-dev):
// NewService per service, then NewDestination per real server, one request in flight at a
// time, waiting for each ack. With -gets it also does kube-proxy's reads around them
// (syncService: GetService, then NewService; syncEndpoint: GetService, GetDestinations).
// The table is the daemon benchmark's: service i is TCP 10.96.(i>>8).(i&255):80 (rr), real
// server j is 10.(100+(n>>16)).((n>>8)&255).(n&255):8080, masquerade, weight 1, n = i*dests+j.
// Prints one JSON line: {"peer":"moby/ipvs", "services", "dests", "gets", "seconds", "requests"}.
//
// Build offline: GOPATH=/usr/share/gocode GO111MODULE=off go build (scripts/bench/run.sh).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/moby/ipvs"
)

func main() {
	gets := flag.Bool("gets", false, "also do kube-proxy's GetService/GetDestinations reads")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: moby-ipvs-load [-gets] SERVICES DESTS")
		os.Exit(2)
	}
	services, err1 := strconv.Atoi(flag.Arg(0))
	dests, err2 := strconv.Atoi(flag.Arg(1))
	if err1 != nil || err2 != nil || services < 1 || services > 65536 || dests < 0 {
		fmt.Fprintln(os.Stderr, "SERVICES (1..65536) and DESTS must be numbers")
		os.Exit(2)
	}
	h, err := ipvs.New("")
	if err != nil {
		fmt.Fprintln(os.Stderr, "open ipvs:", err)
		os.Exit(1)
	}
	defer h.Close()
	requests := 0
	start := time.Now()
	for i := 0; i < services; i++ {
		svc := &ipvs.Service{
			Address:       net.IPv4(10, 96, byte(i>>8), byte(i)).To4(),
			Protocol:      syscall.IPPROTO_TCP,
			Port:          80,
			SchedName:     "rr",
			AddressFamily: syscall.AF_INET,
			Netmask:       0xffffffff,
		}
		if *gets {
			if _, err := h.GetService(svc); err == nil {
				fail("service %d exists already", i)
			}
			requests++
		}
		if err := h.NewService(svc); err != nil {
			fail("add service %d: %v", i, err)
		}
		requests++
		if *gets {
			if _, err := h.GetService(svc); err != nil {
				fail("get service %d: %v", i, err)
			}
			if _, err := h.GetDestinations(svc); err != nil {
				fail("get destinations of %d: %v", i, err)
			}
			requests += 2
		}
		for j := 0; j < dests; j++ {
			n := i*dests + j
			d := &ipvs.Destination{
				Address:       net.IPv4(10, byte(100+(n>>16)), byte(n>>8), byte(n)).To4(),
				Port:          8080,
				Weight:        1,
				AddressFamily: syscall.AF_INET,
			}
			if err := h.NewDestination(svc, d); err != nil {
				fail("add destination %d of service %d: %v", j, i, err)
			}
			requests++
		}
	}
	seconds := time.Since(start).Seconds()
	out, _ := json.Marshal(map[string]interface{}{
		"peer": "moby/ipvs", "services": services, "dests": dests, "gets": *gets, "seconds": seconds, "requests": requests,
	})
	fmt.Println(string(out))
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}
