use super::*;

fn sample(len: usize) -> Vec<u8> {
    // Compressible but not trivial: repeated words with a counter.
    let mut out = Vec::with_capacity(len);
    let mut i = 0u32;
    while out.len() < len {
        out.extend_from_slice(format!("record-{} value-{} ", i % 97, i).as_bytes());
        i += 1;
    }
    out.truncate(len);
    out
}

#[test]
fn every_codec_round_trips() {
    for codec in Compression::ALL {
        for len in [0, 1, 100, 32 * 1024, 32 * 1024 + 1, 200_000] {
            let data = sample(len);
            let packed = codec.compress(&data);
            let unpacked = codec.decompress(&packed, data.len()).unwrap();
            assert_eq!(unpacked, data, "{codec} {len}");
            if len >= 1000 && codec != Compression::None {
                assert!(
                    packed.len() < data.len() / 2,
                    "{codec} {len}: {}",
                    packed.len()
                );
            }
        }
    }
}

#[test]
fn names_and_ids_round_trip() {
    for codec in Compression::ALL {
        assert_eq!(codec.name().parse::<Compression>(), Ok(codec));
        assert_eq!(Compression::from_id(codec.id()), Some(codec));
        assert_eq!(codec.to_string(), codec.name());
    }
    for id in 5..8 {
        assert_eq!(Compression::from_id(id), None);
    }
    assert!("lz5".parse::<Compression>().is_err());
}

#[test]
fn gzip_header_is_java_17s() {
    let packed = Compression::Gzip.compress(b"hello");
    assert_eq!(&packed[..10], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
}

#[test]
fn snappy_is_xerial_framed_in_32k_blocks() {
    let data = sample(70_000);
    let packed = Compression::Snappy.compress(&data);
    assert_eq!(&packed[..8], b"\x82SNAPPY\0");
    assert_eq!(&packed[8..16], &[0, 0, 0, 1, 0, 0, 0, 1]);
    // Walk the blocks: 32 KiB, 32 KiB, the rest.
    let mut at = 16;
    let mut sizes = Vec::new();
    while at < packed.len() {
        let length = i32::from_be_bytes(packed[at..at + 4].try_into().unwrap()) as usize;
        let block = &packed[at + 4..at + 4 + length];
        sizes.push(snap::raw::decompress_len(block).unwrap());
        at += 4 + length;
    }
    assert_eq!(sizes, vec![32 * 1024, 32 * 1024, 70_000 - 64 * 1024]);
    // Without the header: one raw block, as xerial reads it.
    let raw = snap::raw::Encoder::new().compress_vec(&data).unwrap();
    assert_eq!(
        Compression::Snappy.decompress(&raw, data.len()).unwrap(),
        data
    );
}

#[test]
fn lz4_frame_has_kafkas_descriptor() {
    let data = sample(150_000);
    let packed = Compression::Lz4.compress(&data);
    // Magic, FLG 0x60, BD 0x40, HC = (xxh32(FLG BD) >> 8) & 0xff.
    assert_eq!(&packed[..7], &[0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82]);
    assert_eq!(
        &packed[packed.len() - 4..],
        &[0, 0, 0, 0],
        "end mark, no content checksum"
    );
    // Blocks of at most 64 KiB of input: three for 150,000 bytes.
    let mut at = 7;
    let mut blocks = 0;
    loop {
        let word = u32::from_le_bytes(packed[at..at + 4].try_into().unwrap());
        at += 4;
        if word == 0 {
            break;
        }
        at += (word & 0x7fff_ffff) as usize;
        blocks += 1;
    }
    assert_eq!(at, packed.len());
    assert_eq!(blocks, 3);
    // An incompressible block is stored (high bit set), as Kafka does.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let noise: Vec<u8> = (0..1000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect();
    let packed = Compression::Lz4.compress(&noise);
    let word = u32::from_le_bytes(packed[7..11].try_into().unwrap());
    assert_eq!(word, 0x8000_0000 | 1000);
    assert_eq!(Compression::Lz4.decompress(&packed, 1000).unwrap(), noise);
}

#[test]
fn zstd_frame_has_no_content_size_or_checksum() {
    let packed = Compression::Zstd.compress(&sample(5000));
    assert_eq!(&packed[..4], &[0x28, 0xb5, 0x2f, 0xfd]);
    let descriptor = packed[4];
    assert_eq!(descriptor & 0b0000_0100, 0, "no content checksum");
    assert_eq!(descriptor >> 6, 0, "no frame content size field (streamed)");
}

#[test]
fn decompression_is_bounded() {
    // A bomb: a megabyte of zeros compresses to a few hundred bytes or less.
    let zeros = vec![0u8; 1 << 20];
    for codec in Compression::ALL {
        let packed = codec.compress(&zeros);
        assert_eq!(
            codec.decompress(&packed, (1 << 20) - 1),
            Err(CodecError::TooLarge {
                limit_bytes: (1 << 20) - 1
            }),
            "{codec}"
        );
        assert_eq!(codec.decompress(&packed, 1 << 20).unwrap().len(), 1 << 20);
    }
}

#[test]
fn garbage_and_truncations_are_errors_not_panics() {
    let data = sample(5000);
    for codec in Compression::ALL.into_iter().skip(1) {
        let packed = codec.compress(&data);
        for cut in [0, 1, 5, packed.len() / 2, packed.len() - 1] {
            let result = codec.decompress(&packed[..cut], 1 << 20);
            // A cut stream either fails or (never) gives the whole data back.
            assert_ne!(result.as_deref().ok(), Some(&data[..]), "{codec} cut {cut}");
        }
        assert!(
            codec.decompress(b"not a stream at all", 1 << 20).is_err(),
            "{codec}"
        );
    }
}

#[test]
fn lz4_blocks_never_see_another_blocks_bytes() {
    // A large frame first fills the thread's block scratch with its output.
    let big = sample(150_000);
    let codec = Compression::Lz4;
    assert_eq!(
        codec.decompress(&codec.compress(&big), 1 << 20).unwrap(),
        big
    );
    // A block that opens with a match one byte back (token 0x04: no literal,
    // match of 8; offset 1): nothing is before it, whatever the scratch holds.
    let frame = [
        0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82, 3, 0, 0, 0, 0x04, 0x01, 0x00, 0, 0, 0, 0,
    ];
    assert!(matches!(
        codec.decompress(&frame, 1 << 20),
        Err(CodecError::Invalid(_))
    ));
    // Small frames after the large one read back exactly (the scratch's stale
    // tail is not copied out), one block or several.
    for len in [0, 1, 700, 13_000, 64 * 1024, 64 * 1024 + 1] {
        let data = sample(len);
        assert_eq!(codec.decompress(&codec.compress(&data), len).unwrap(), data);
    }
}

#[test]
fn lz4_frames_of_larger_blocks_decode_in_place() {
    // Kafka writes 64 KiB blocks; it reads 256 KiB ones (BD 0x50), which are
    // decompressed straight into the output rather than through the scratch.
    let data = sample(150_000);
    let mut packed = Compression::Lz4.compress(&data);
    packed[5] = 0x50;
    packed[6] = ((twox_hash::XxHash32::oneshot(0, &packed[4..6]) >> 8) & 0xff) as u8;
    assert_eq!(Compression::Lz4.decompress(&packed, 1 << 20).unwrap(), data);
    assert_eq!(
        Compression::Lz4.decompress(&packed, 100_000),
        Err(CodecError::TooLarge {
            limit_bytes: 100_000
        })
    );
}

/// `decompress_reusing`'s answer as `decompress` gives it: the bytes or the error.
fn reusing(
    codec: Compression,
    data: &[u8],
    limit: usize,
    buf: &mut Vec<u8>,
) -> Result<Vec<u8>, CodecError> {
    codec
        .decompress_reusing(data, limit, buf)
        .map(|len| buf[..len].to_vec())
}

#[test]
fn decompress_reusing_gives_what_decompress_gives() {
    // One arena for everything: large frames first (its stale bytes then lie
    // beyond every later output), then small ones, damaged ones, bombs.
    let mut buf = Vec::new();
    let mut frames = Vec::new();
    for codec in Compression::ALL {
        for len in [
            200_000,
            150_000,
            0,
            1,
            700,
            13_000,
            64 * 1024,
            64 * 1024 + 1,
        ] {
            let packed = codec.compress(&sample(len));
            for cut in [
                packed.len(),
                packed.len() / 2,
                packed.len().saturating_sub(1),
            ] {
                frames.push((codec, packed[..cut].to_vec(), 1 << 20));
            }
            let mut flipped = packed.clone();
            if let Some(byte) = flipped.get_mut(len % 97 + 7) {
                *byte ^= 0x55;
                frames.push((codec, flipped, 1 << 20));
            }
            frames.push((codec, packed, len.saturating_sub(1)));
        }
        frames.push((codec, codec.compress(&vec![0u8; 1 << 20]), (1 << 20) - 1));
    }
    // The larger-block frame (BD 0x50) and a match reaching before its block.
    let mut big_blocks = Compression::Lz4.compress(&sample(150_000));
    big_blocks[5] = 0x50;
    big_blocks[6] = ((twox_hash::XxHash32::oneshot(0, &big_blocks[4..6]) >> 8) & 0xff) as u8;
    frames.push((Compression::Lz4, big_blocks, 1 << 20));
    let reaching_back = vec![
        0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82, 3, 0, 0, 0, 0x04, 0x01, 0x00, 0, 0, 0, 0,
    ];
    frames.push((Compression::Lz4, reaching_back, 1 << 20));
    let mut oks = 0;
    for (codec, frame, limit) in &frames {
        let want = codec.decompress(frame, *limit);
        oks += usize::from(want.is_ok());
        assert_eq!(
            reusing(*codec, frame, *limit, &mut buf),
            want,
            "{codec} {}",
            frame.len()
        );
    }
    assert!(
        oks > frames.len() / 3 && oks < frames.len(),
        "{oks} of {}",
        frames.len()
    );
}
