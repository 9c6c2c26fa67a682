//! Reading an agent's output line by line with a cap on how much of one line is kept. The
//! bytes past the cap are still read (and counted), so the pipe is always drained: an
//! agent writing a line without end never fills memory, and never blocks on a full pipe.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// One line as read: its first bytes, and how many more were dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawLine {
    /// Up to the cap, without the line break.
    pub bytes: Vec<u8>,
    /// Bytes of the line past the cap, read and dropped.
    pub dropped: usize,
}

impl RawLine {
    /// The line as text, bytes that are not UTF-8 replaced (`�`).
    pub fn lossy(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// Lines of a reader, each kept to at most `cap` bytes.
pub struct CappedLines<R> {
    /// What is read.
    reader: R,
    /// Most bytes of one line kept.
    cap: usize,
}

impl<R: AsyncBufRead + Unpin> CappedLines<R> {
    /// Lines of `reader`, each kept to at most `cap` bytes.
    pub fn new(reader: R, cap: usize) -> Self {
        Self { reader, cap }
    }

    /// The next line (a last line without a break counts), or `None` at the end.
    pub async fn next_line(&mut self) -> std::io::Result<Option<RawLine>> {
        let mut line = RawLine {
            bytes: Vec::new(),
            dropped: 0,
        };
        let mut read_any = false;
        loop {
            let buf = self.reader.fill_buf().await?;
            if buf.is_empty() {
                return Ok(read_any.then_some(line));
            }
            read_any = true;
            let (part, end) = match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            let room = self.cap.saturating_sub(line.bytes.len());
            let kept = part.len().min(room);
            line.bytes.extend_from_slice(&part[..kept]);
            line.dropped += part.len() - kept;
            let used = end.unwrap_or(part.len());
            self.reader.consume(used);
            if end.is_some() {
                if line.bytes.last() == Some(&b'\r') {
                    line.bytes.pop();
                }
                return Ok(Some(line));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line of `input`, read through a buffer of `buffer` bytes.
    async fn all(input: &[u8], cap: usize, buffer: usize) -> Vec<RawLine> {
        let reader = tokio::io::BufReader::with_capacity(buffer, input);
        let mut lines = CappedLines::new(reader, cap);
        let mut out = Vec::new();
        while let Some(line) = lines.next_line().await.unwrap() {
            out.push(line);
        }
        out
    }

    #[tokio::test]
    async fn lines_come_whole_under_the_cap_and_cut_over_it() {
        let lines = all(b"short\r\nthis one is long\nlast", 8, 3).await;
        let shown: Vec<(String, usize)> = lines.iter().map(|l| (l.lossy(), l.dropped)).collect();
        assert_eq!(
            shown,
            [
                ("short".to_owned(), 0),
                ("this one".to_owned(), 8),
                ("last".to_owned(), 0),
            ]
        );
    }

    #[tokio::test]
    async fn bytes_that_are_not_text_are_kept_lossily_and_reading_goes_on() {
        let lines = all(b"ok \xff\xfe bad\nnext\n", 100, 5).await;
        assert_eq!(lines[0].lossy(), "ok \u{fffd}\u{fffd} bad");
        assert_eq!(lines[1].lossy(), "next");
    }

    #[tokio::test]
    async fn a_huge_line_is_drained_without_being_kept() {
        let mut input = vec![b'x'; 10_000_000];
        input.extend_from_slice(b"\nafter\n");
        let lines = all(&input, 4_096, 64 * 1024).await;
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].bytes.len(), 4_096);
        assert_eq!(lines[0].dropped, 10_000_000 - 4_096);
        assert_eq!(lines[1].lossy(), "after");
    }

    proptest::proptest! {
        /// Whatever an agent writes, reading never fails or panics, no line keeps more
        /// than the cap, and every line break makes exactly one line.
        #[test]
        fn any_output_is_read_line_by_line_within_the_cap(
            input in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
            cap in 0usize..64,
            buffer in 1usize..32,
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let lines = runtime.block_on(all(&input, cap, buffer));
            let breaks = input.iter().filter(|b| **b == b'\n').count();
            let unfinished = usize::from(input.last().is_some_and(|b| *b != b'\n'));
            proptest::prop_assert_eq!(lines.len(), breaks + unfinished);
            for line in &lines {
                proptest::prop_assert!(line.bytes.len() <= cap);
            }
            if cap >= input.len() {
                proptest::prop_assert!(lines.iter().all(|l| l.dropped == 0));
            }
        }
    }
}
