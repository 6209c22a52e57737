package splice

import (
	"io"
	"net"
	"testing"
)

// A client that half-closes after its request still reads the whole
// answer through the splice, and the splice ends once both sides are done.
func TestConnsPassesHalfClose(t *testing.T) {
	server, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer front.Close()
	go func() { // the server answers what it read, after the client's EOF
		c, err := server.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		got, _ := io.ReadAll(c)
		_, _ = c.Write(append([]byte("echo: "), got...))
	}()
	done := make(chan struct{})
	go func() { // the splice between the client's side and the server
		defer close(done)
		c, err := front.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", server.Addr().String())
		if err != nil {
			c.Close()
			return
		}
		Conns(c, u)
	}()
	c, err := net.Dial("tcp", front.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "echo: hello" {
		t.Fatalf("read %q, %v; want the answer after the half-close", got, err)
	}
	<-done
}
