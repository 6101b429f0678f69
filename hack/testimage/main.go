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
//
// Every event is also printed to stdout, so the container's log tells what happened.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
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
	if err := fs.Parse(args); err != nil {
		return 2
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
