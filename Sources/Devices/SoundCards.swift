// Card discovery: which sound cards are present now.

/// The sound cards present, from libasound's card list (snd_card_next) and each card's
/// control interface (snd_ctl_card_info).
public enum SoundCards {
    /// The cards present, by index. A box without sound hardware (no /dev/snd) gives an
    /// empty list, not an error; a card that cannot be opened (permissions, or it vanished
    /// while being listed) is left out. Any thread.
    public static func list() -> [SoundCard] {
        scan().cards
    }

    /// Like `list()`, but also says which cards could not be opened and why.
    public static func scan() -> (cards: [SoundCard], problems: [ALSAError]) {
        var cards: [SoundCard] = []
        var problems: [ALSAError] = []
        for index in alsaCardIndexes() {
            do {
                cards.append(try ControlHandle(cardIndex: index, nonblocking: true).cardInfo())
            } catch {
                problems.append(error)
            }
        }
        return (cards, problems)
    }
}
