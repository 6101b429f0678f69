// Command testimage is the program of the end-to-end suite's container image (built by
// ./mkimage, imported by hack/containerd.sh): one static binary whose behaviour the
// container's args (or the environment) choose. With no arguments it sleeps until SIGTERM
// or SIGINT and exits 0, which makes it the CRI sandbox's "pause" image too.
//
//	-print TEXT        print TEXT to stdout at start (env TESTIMAGE_PRINT)
//	-exit-after D      exit on its own after D (env TESTIMAGE_EXIT_AFTER; 0: never)
//	-exit-code N       the exit code, on its own or on SIGTERM (env TESTIMAGE_EXIT_CODE)
//	-ignore-term       ignore SIGTERM: only SIGKILL stops it (env TESTIMAGE_IGNORE_TERM=1)
//	-term-delay D      on SIGTERM, exit after D (env TESTIMAGE_TERM_DELAY)
//	-write-file PATH   at start, write -write-bytes zero bytes to PATH (fill the container's
//	                   writable layer, as an ephemeral-storage eviction test's dd does)
//	-write-bytes N     how many bytes -write-file writes (default 8 MiB)
//	-check PATH        exit at once: 0 if PATH exists, else 1 (an exec probe's command:
//	                   /testimage -check /tmp/ready)
//	-touch PATH        create PATH after -touch-after, remove it after -remove-after (0:
//	                   never), e.g. to make an exec probe succeed, then fail
//	-http ADDR         serve GET /healthz on ADDR: 200 "ok" for -healthy-for after the
//	                   start (0: always), then 500 (an httpGet probe's target)
//	-get URL           exit at once after a GET of URL with the bearer token of
//	                   -bearer-file (a service account token) and the CA of -ca-file:
//	                   prints the status and the body, 0 on a 2xx status, else 1
//	-watch-file PATH   print PATH's content at start and whenever it changes (checked
//	                   every 100 ms), e.g. a configMap volume's file
//	-print-env         print each environment variable at start, sorted, as "env NAME=value"
//
// Every event is also printed to stdout, so the container's log tells what happened.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func envDuration(key string) time.Duration {
	d, _ := time.ParseDuration(os.Getenv(key))
	return d
}

func envInt(key string) int {
	n, _ := strconv.Atoi(os.Getenv(key))
	return n
}

func run(args []string) int {
	fs := flag.NewFlagSet("testimage", flag.ContinueOnError)
	text := fs.String("print", os.Getenv("TESTIMAGE_PRINT"), "print this to stdout at start")
	exitAfter := fs.Duration("exit-after", envDuration("TESTIMAGE_EXIT_AFTER"), "exit on its own after this long (0: never)")
	code := fs.Int("exit-code", envInt("TESTIMAGE_EXIT_CODE"), "exit code")
	ignoreTerm := fs.Bool("ignore-term", os.Getenv("TESTIMAGE_IGNORE_TERM") == "1", "ignore SIGTERM")
	termDelay := fs.Duration("term-delay", envDuration("TESTIMAGE_TERM_DELAY"), "on SIGTERM, exit after this long")
	writeFile := fs.String("write-file", "", "at start, write -write-bytes zero bytes to this file")
	writeBytes := fs.Int64("write-bytes", 8<<20, "how many bytes -write-file writes")
	check := fs.String("check", "", "exit at once: 0 if this file exists, else 1")
	touch := fs.String("touch", "", "create this file after -touch-after, remove it after -remove-after")
	touchAfter := fs.Duration("touch-after", 0, "when -touch creates its file")
	removeAfter := fs.Duration("remove-after", 0, "when -touch removes its file (0: never)")
	httpAddr := fs.String("http", "", "serve GET /healthz on this address")
	healthyFor := fs.Duration("healthy-for", 0, "how long /healthz answers 200 before 500 (0: always)")
	// volumes (issue 31): a service account token used, a mounted file watched.
	getURL := fs.String("get", "", "exit at once after a GET of this URL (with -bearer-file and -ca-file): 0 on 2xx, else 1")
	bearerFile := fs.String("bearer-file", "", "with -get: the file of the bearer token")
	caFile := fs.String("ca-file", "", "with -get: the CA file of the server's certificate")
	watchFile := fs.String("watch-file", "", "print this file's content at start and whenever it changes")
	// Environment (issue 29): print the environment to read it back from the log.
	printEnv := fs.Bool("print-env", false, "print each environment variable at start, sorted, as \"env NAME=value\"")
	// hooks and termination messages (issue 29): a hook's command, an HTTP server that logs.
	appendFile := fs.String("append", "", "exit at once after appending the -print text and a newline to this file")
	logRequests := fs.Bool("log-requests", false, "with -http: serve every path with 200 and print each request's path")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *check != "" {
		if _, err := os.Stat(*check); err != nil {
			fmt.Printf("%s: not there\n", *check)
			return 1
		}
		fmt.Printf("%s: there\n", *check)
		return 0
	}
	if *appendFile != "" {
		return appendLine(*appendFile, *text)
	}
	if *getURL != "" {
		return get(*getURL, *bearerFile, *caFile)
	}
	if *watchFile != "" {
		go watch(*watchFile)
	}
	start := time.Now()
	if *touch != "" {
		go touchFile(*touch, *touchAfter, *removeAfter)
	}
	if *httpAddr != "" {
		if err := serveHealth(*httpAddr, start, *healthyFor, *logRequests); err != nil {
			fmt.Printf("testimage: %v\n", err)
			return 1
		}
	}
	if *writeFile != "" {
		if err := fill(*writeFile, *writeBytes); err != nil {
			fmt.Printf("testimage: %v\n", err)
			return 1
		}
		fmt.Printf("testimage: wrote %d bytes to %s\n", *writeBytes, *writeFile)
	}
	if *text != "" {
		fmt.Println(*text)
	}
	if *printEnv {
		env := os.Environ()
		slices.Sort(env)
		for _, e := range env {
			fmt.Printf("env %s\n", e)
		}
	}
	fmt.Printf("testimage: started (pid %d)\n", os.Getpid())

	// As PID 1 of a PID namespace, a signal without a handler is dropped: handle both.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	var timeout <-chan time.Time
	if *exitAfter > 0 {
		timeout = time.After(*exitAfter)
	}
	var stopping <-chan time.Time
	for {
		select {
		case s := <-sigs:
			if s == syscall.SIGTERM && *ignoreTerm {
				fmt.Println("testimage: SIGTERM ignored")
				continue
			}
			if stopping != nil {
				continue
			}
			fmt.Printf("testimage: %v, exiting in %v\n", s, *termDelay)
			stopping = time.After(*termDelay)
		case <-stopping:
			fmt.Printf("testimage: exit %d\n", *code)
			return *code
		case <-timeout:
			fmt.Printf("testimage: exit %d after %v\n", *code, *exitAfter)
			return *code
		}
	}
}

// touchFile creates path after d, and removes it after remove (0: never), both from the
// start.
func touchFile(path string, d, remove time.Duration) {
	time.Sleep(d)
	if err := os.WriteFile(path, []byte("ok\n"), 0o644); err != nil {
		fmt.Printf("testimage: %v\n", err)
		return
	}
	fmt.Printf("testimage: created %s\n", path)
	if remove <= 0 {
		return
	}
	time.Sleep(remove - d)
	if err := os.Remove(path); err != nil {
		fmt.Printf("testimage: %v\n", err)
		return
	}
	fmt.Printf("testimage: removed %s\n", path)
}

// serveHealth serves /healthz on addr: 200 until healthyFor after start (0: always),
// then 500; with logRequests, every other path too (200), each request printed.
func serveHealth(addr string, start time.Time, healthyFor time.Duration, logRequests bool) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if healthyFor > 0 && time.Since(start) > healthyFor {
			fmt.Printf("testimage: /healthz from %s: 500\n", r.UserAgent())
			http.Error(w, "unhealthy", http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	if logRequests {
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			fmt.Printf("testimage: GET %s from %s\n", r.URL.RequestURI(), r.UserAgent())
			fmt.Fprintln(w, "ok")
		})
	}
	go func() { _ = http.Serve(l, mux) }()
	fmt.Printf("testimage: serving /healthz on %s\n", l.Addr())
	return nil
}

// fill writes n zero bytes to path (real blocks, not a sparse file) and syncs it.
func fill(path string, n int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, int64(len(buf)))
		if _, err := f.Write(buf[:k]); err != nil {
			f.Close()
			return err
		}
		n -= k
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// get GETs url with the token of bearerFile and the CA of caFile, prints the status and
// the body (its first 2000 bytes), and returns 0 on a 2xx status, else 1.
func get(url, bearerFile, caFile string) int {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		fmt.Printf("testimage: %v\n", err)
		return 1
	}
	if bearerFile != "" {
		token, err := os.ReadFile(bearerFile)
		if err != nil {
			fmt.Printf("testimage: %v\n", err)
			return 1
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	}
	tr := &http.Transport{}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			fmt.Printf("testimage: %v\n", err)
			return 1
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			fmt.Printf("testimage: no certificate in %s\n", caFile)
			return 1
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		fmt.Printf("testimage: GET %s: %v\n", url, err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 2000))
	fmt.Printf("GET %s: %s\n%s\n", url, resp.Status, body)
	if resp.StatusCode/100 != 2 {
		return 1
	}
	return 0
}

// watch prints path's content at start and whenever it changes, every 100 ms.
func watch(path string) {
	last := "\x00none"
	for {
		data, err := os.ReadFile(path)
		cur := string(data)
		if err != nil {
			cur = "error: " + err.Error()
		}
		if cur != last {
			fmt.Printf("watch-file %s: %s\n", path, cur)
			last = cur
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// appendLine appends text and a newline to path: 0, else 1.
func appendLine(path, text string) int {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
	if err == nil {
		_, err = fmt.Fprintln(f, text)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Printf("testimage: %v\n", err)
		return 1
	}
	return 0
}
