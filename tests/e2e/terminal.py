"""A full-screen terminal program in a pseudo-terminal, its screen kept by ``pyte``.

The program's stdin and stdout are the pseudo-terminal; its stderr goes to a file, so that
a traceback printed by one of its threads neither lands on the screen nor is lost. Tests
type keys with ``send`` and wait for what a person would see with ``wait_for``, which
reads the program's output while it polls, so the program never blocks on a full pty.
"""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pyte

COLUMNS = 120
LINES = 40


class Terminal:
    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: dict[str, str],
        stderr_path: Path,
        describe: Callable[[], str] = lambda: "",
        columns: int = COLUMNS,
        lines: int = LINES,
    ) -> None:
        """Start ``argv``; ``describe`` adds the caller's diagnostics to every failure."""
        self.stderr_path = stderr_path
        self._describe = describe
        self.screen = pyte.Screen(columns, lines)
        self._stream = pyte.ByteStream(self.screen)
        master, slave = os.openpty()
        # The size is set before the program starts, so its first layout is the final one.
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
        try:
            with stderr_path.open("wb") as stderr:
                self.process = subprocess.Popen(
                    list(argv),
                    cwd=cwd,
                    env=env,
                    stdin=slave,
                    stdout=slave,
                    stderr=stderr,
                    start_new_session=True,
                )
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        self._master: int | None = master

    # --- the screen ----------------------------------------------------------------------

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    def _pump(self, timeout: float) -> None:
        """Feed whatever the program wrote within ``timeout`` seconds into the screen."""
        if self._master is None:
            return
        ready, _, _ = select.select([self._master], [], [], timeout)
        if not ready:
            return
        try:
            data = os.read(self._master, 1 << 16)
        except OSError:  # EIO: the program closed the terminal.
            data = b""
        if data:
            self._stream.feed(data)
        else:
            time.sleep(timeout)

    def wait_for(
        self,
        what: str,
        predicate: Callable[[str], bool],
        *,
        timeout: float = 30.0,
        check: Callable[[], str | None] = lambda: None,
    ) -> str:
        """Poll the screen until ``predicate(text)`` holds; the screen text then.

        Fails at once when the program exits or ``check`` returns a problem (e.g. a crash
        in the program's log), and after ``timeout`` seconds otherwise, each time with the
        screen, the program's stderr and the caller's diagnostics.
        """
        deadline = time.monotonic() + timeout
        while True:
            self._pump(0.1)
            text = self.text()
            if predicate(text):
                return text
            problem = check()
            if problem:
                raise AssertionError(self.report(f"while waiting for {what}: {problem}"))
            code = self.process.poll()
            if code is not None:
                self._pump(0.1)
                raise AssertionError(
                    self.report(f"the program exited with {code} while waiting for {what}")
                )
            if time.monotonic() > deadline:
                raise AssertionError(self.report(f"{what} did not appear within {timeout:.0f} s"))

    def report(self, headline: str) -> str:
        stderr = self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""
        return (
            f"{headline}\n--- screen ---\n{self.text()}\n--- stderr ---\n{stderr[-6000:]}\n"
            f"{self._describe()}"
        )

    # --- input and shutdown --------------------------------------------------------------

    def send(self, keys: str) -> None:
        assert self._master is not None, "the terminal is closed"
        os.write(self._master, keys.encode())

    def close(self, timeout: float = 5.0) -> None:
        """Stop the program (SIGTERM, then SIGKILL) by its PID and close the terminal."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=timeout)
        if self._master is not None:
            os.close(self._master)
            self._master = None
