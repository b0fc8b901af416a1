/// How a file's channels become a player's channels: mono is copied to every player channel;
/// otherwise file channel n goes to player channel n, extra file channels are dropped and
/// missing ones are silent.
enum ChannelMap {
    /// Maps `frames` interleaved frames from `source` (`sourceChannels` wide) into
    /// `destination` (`destinationChannels` wide).
    static func map(
        _ source: UnsafePointer<Float>, sourceChannels: Int, frames: Int,
        into destination: UnsafeMutablePointer<Float>, destinationChannels: Int
    ) {
        if sourceChannels == destinationChannels {
            destination.update(from: source, count: frames * sourceChannels)
            return
        }
        for frame in 0..<frames {
            let input = source + frame * sourceChannels
            let output = destination + frame * destinationChannels
            for channel in 0..<destinationChannels {
                if sourceChannels == 1 {
                    output[channel] = input[0]
                } else {
                    output[channel] = channel < sourceChannels ? input[channel] : 0
                }
            }
        }
    }
}
