"""Text utilities."""


def word_count(text):
    counts = {}
    for word in text.lower().split():
        word = word.strip(".,;:!?")
        if not word:
            continue
        counts[word] = counts.get(word, 0) + 1
    return counts


def truncate(text, limit):
    if len(text) <= limit:
        return text
    return text[:limit - 3] + "..."


def is_palindrome(text):
    letters = [ch.lower() for ch in text if ch.isalnum()]
    for index in range(len(letters) // 2):
        if letters[index] != letters[len(letters) - 1 - index]:
            return False
    return True


def caesar(text, shift):
    out = []
    for ch in text:
        if ch.isalpha() and ch.islower():
            out.append(chr((ord(ch) - ord("a") + shift) % 26 + ord("a")))
        else:
            out.append(ch)
    return "".join(out)


def run_length(text):
    pieces = []
    index = 0
    while index < len(text):
        end = index
        while end < len(text) and text[end] == text[index]:
            end += 1
        pieces.append(f"{end - index}{text[index]}")
        index = end
    return "".join(pieces)


def wrap(text, width):
    lines = []
    current = ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        elif current:
            current = current + " " + word
        else:
            current = word
    if current:
        lines.append(current)
    return lines
