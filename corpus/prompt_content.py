"""The text of the hypothesis-writing prompts: genres, prompt families, worked examples and FAQs.

MultiNLI (§2.1, Figure 1) used five prompts, one per group of genres: written non-fiction
(slate, oup, government, verbatim, travel), spoken (telephone, face-to-face), fiction,
letters, and 9/11, the last written with care for its emotional content. We add a sixth
family, "captions", for SNLI-style premises that describe a photo.

This is plain data. Migration 0002 installs a frozen copy of it; researchers then edit the
rows in the admin. `corpus.prompt_install.install_prompt_content` re-creates whatever rows are
missing (for a database that was flushed, e.g. by a transactional test) without touching edited rows.
If you change the text here, write a new data migration that applies the change.
"""

from typing import Any

# Questions every family's FAQ ends with.
GENERAL_FAQ: list[dict[str, str]] = [
    {
        "question": "Do my sentences need perfect grammar and spelling?",
        "answer": (
            "Write clear, complete sentences with ordinary spelling and punctuation; short sentences are "
            "welcome. A small slip is no problem, but please read your sentences once before you submit: "
            "a sentence nobody can understand cannot be labelled."
        ),
    },
    {
        "question": "The text mentions people or places I don't know. May I use their names?",
        "answer": (
            "Yes. Reuse the names you were given and take them to mean the same people and places in all "
            "three of your sentences. You may also write 'a man', 'the company' or 'the town'. Please don't "
            "look anything up."
        ),
    },
    {
        "question": "Can I copy the text and change one word, or just add 'not'?",
        "answer": (
            "Please don't. Sentences made by deleting a few words, adding 'not' or swapping in an opposite "
            "word are easy for a computer to spot without understanding anything, so they teach it little. "
            "Write in your own words, and vary how you make a sentence incorrect."
        ),
    },
    {
        "question": "How am I paid, and is there a bonus?",
        "answer": (
            "If you came from a crowd-work site such as Prolific, you get a completion code after the last "
            "task of your batch; enter it on that site, and payment follows that site's usual approval "
            "schedule. Bonuses belong to the validation task: researchers label a small share of the pairs "
            "themselves, and a validator earns a bonus each time their label matches the researchers'."
        ),
    },
    {
        "question": "The text is garbled, is not a sentence, or is offensive. What should I do?",
        "answer": (
            "Describe the problem in the optional 'report a problem' box below the three fields. A researcher "
            "reads every report and takes broken text out of the task. If you can still write three sensible "
            "sentences, please do."
        ),
    },
]

FAMILIES: list[dict[str, Any]] = [
    {
        "slug": "nonfiction",
        "name": "Written non-fiction",
        "instructions": (
            "You will read one line taken from a non-fiction text (a magazine article, a government report, "
            "a travel guide or a reference book) and write three new sentences about it. The line describes "
            "some situation or event. Work only from what the line says and from what any ordinary person "
            "knows about the world.\n\n"
            "Some lines contain strong opinions, rude words or personal stories. Those views belong to the "
            "original author, not to the researchers. If you happen to know more about the people, places or "
            "events in the line, leave that knowledge aside and write from the line itself and common sense.\n\n"
            "Your sentences will be used in research on how computers understand English. Thank you for "
            "taking part! The FAQ answers the usual questions."
        ),
        "entailment_prompt": "Write one sentence that is definitely correct about the situation or event in the line.",
        "neutral_prompt": "Write one sentence that might be correct about the situation or event in the line.",
        "contradiction_prompt": "Write one sentence that is definitely incorrect about the situation or event in the line.",
        "faq_intro": "Questions about writing sentences for lines from articles, reports, guides and books.",
        "examples": [
            {
                "label": "entailment",
                "premise": (
                    "The museum's east wing, closed for repairs since the spring floods, reopens to visitors in "
                    "October with its Roman glass collection rehung in brighter rooms."
                ),
                "hypothesis": "The east wing of the museum has been shut for several months.",
                "explanation": "It has been closed since the spring and opens again in October, so this must be true.",
            },
            {
                "label": "neutral",
                "premise": (
                    "The agency's annual report credits its new online filing system with cutting average "
                    "processing times by a third."
                ),
                "hypothesis": "The online filing system cost more to build than the agency had planned.",
                "explanation": "The line says nothing about the cost; this could be true or false.",
            },
            {
                "label": "contradiction",
                "premise": (
                    "Critics have called the film's final twenty minutes the most daring thing the director has "
                    "ever attempted."
                ),
                "hypothesis": "Reviewers found nothing unusual about the ending of the film.",
                "explanation": "Critics who call an ending daring did not find it ordinary; both cannot be true.",
            },
        ],
        "faq": [
            {
                "question": "The line is full of facts and figures. Must my sentences repeat them?",
                "answer": (
                    "No. A sentence may be short and general. It only has to be definitely correct, possibly "
                    "correct or definitely incorrect given the line; you need not mention every number."
                ),
            },
            {
                "question": "The line gives someone's opinion. Do I treat the opinion as true?",
                "answer": (
                    "Treat what the line reports as true: if it says a critic disliked a play, then 'The critic "
                    "did not like the play' is definitely correct, whatever you think of the play yourself."
                ),
            },
            {
                "question": "I know this subject well. Can I use what I know?",
                "answer": (
                    "Use only knowledge that most people share (Paris is in France; winter is colder than "
                    "summer). Someone who reads only the line should be able to agree with your label."
                ),
            },
        ],
    },
    {
        "slug": "spoken",
        "name": "Spoken (telephone, face-to-face)",
        "instructions": (
            "You will read one line from the transcript of a real conversation, held on the telephone or face "
            "to face, and write three new sentences about it. Transcripts keep what people actually said: "
            "hesitations such as 'uh' and 'um', repeated words and half-finished sentences. Work out what the "
            "speaker means, and use only that and what any ordinary person knows about the world.\n\n"
            "Speakers may use rough language or share opinions and personal stories; those belong to them, not "
            "to the researchers. Write your own sentences in plain, tidy English: there is no need to imitate "
            "the hesitations of the transcript.\n\n"
            "Your sentences will be used in research on how computers understand English. Thank you for "
            "taking part! The FAQ answers the usual questions."
        ),
        "entailment_prompt": "Write one sentence that is definitely correct about the conversation.",
        "neutral_prompt": "Write one sentence that might be correct about the conversation.",
        "contradiction_prompt": "Write one sentence that is definitely incorrect about the conversation.",
        "faq_intro": "Questions about writing sentences for lines of transcribed conversation.",
        "examples": [
            {
                "label": "entailment",
                "premise": (
                    "yeah we um we finally got rid of the old station wagon last month it just it was costing "
                    "us more in repairs than it was worth"
                ),
                "hypothesis": "The speaker's family no longer owns the station wagon.",
                "explanation": "They got rid of it last month, so this must be true.",
            },
            {
                "label": "neutral",
                "premise": (
                    "well my daughter she's she's been after me to try one of those uh cooking classes down at "
                    "the community center"
                ),
                "hypothesis": "The speaker's daughter has taken a cooking class herself.",
                "explanation": "Nothing says whether the daughter has taken one; it might be true.",
            },
            {
                "label": "contradiction",
                "premise": ("oh i i don't watch much television anymore maybe the news at night and that's about it"),
                "hypothesis": "The speaker watches several hours of television every afternoon.",
                "explanation": "The speaker watches little more than the evening news, so this cannot be true.",
            },
        ],
        "faq": [
            {
                "question": "The line is full of 'um', 'uh' and repeated words. Should my sentences have them too?",
                "answer": (
                    "No. Write ordinary written English. You don't need to copy hesitations, false starts or "
                    "repetitions from the transcript into your sentences."
                ),
            },
            {
                "question": "Who are 'I' and 'you' in the line?",
                "answer": (
                    "'I' is the person speaking. 'You' is usually the other person in the conversation, and "
                    "sometimes just means 'people in general'. You can write 'The speaker ...' in your sentences."
                ),
            },
            {
                "question": "The line stops in the middle of a thought. What do I do?",
                "answer": (
                    "Conversations are like that. Write about what was said. If you cannot make any sense of the "
                    "line, say so in the 'report a problem' box."
                ),
            },
        ],
    },
    {
        "slug": "fiction",
        "name": "Fiction",
        "instructions": (
            "You will read one line from a published work of fiction (a crime story, a western, an adventure, "
            "a science-fiction or fantasy tale) and write three new sentences about it. The line is part of a "
            "scene or story. Work only from the line itself and from what any ordinary person knows about the "
            "world; you don't know the rest of the book, and you don't need to.\n\n"
            "Stories may include violence, rough language or characters with unpleasant views; these belong to "
            "the story, not to the researchers. Treat the events of the story as true for this task, even when "
            "they could never happen in real life.\n\n"
            "Your sentences will be used in research on how computers understand English. Thank you for "
            "taking part! The FAQ answers the usual questions."
        ),
        "entailment_prompt": "Write one sentence that is definitely correct about the scene or story in the line.",
        "neutral_prompt": "Write one sentence that might be correct about the scene or story in the line.",
        "contradiction_prompt": "Write one sentence that is definitely incorrect about the scene or story in the line.",
        "faq_intro": "Questions about writing sentences for lines from stories and novels.",
        "examples": [
            {
                "label": "entailment",
                "premise": (
                    "Marguerite set the lantern on the crate and counted the coins twice before she would "
                    "believe there were only eleven."
                ),
                "hypothesis": "Marguerite counted some money.",
                "explanation": "She counted the coins, so this must be true.",
            },
            {
                "label": "neutral",
                "premise": (
                    "The captain pressed his palm against the cold hull and listened, as he always did before a "
                    "jump, for the faint hum of the drive."
                ),
                "hypothesis": "The captain was worried that the drive would fail.",
                "explanation": "He listens out of habit; he may or may not be worried.",
            },
            {
                "label": "contradiction",
                "premise": "Nobody in Cutter's Ford had seen rain since the spring the mill burned down.",
                "hypothesis": "It rained in Cutter's Ford every week after the mill fire.",
                "explanation": "There has been no rain since the fire, so weekly rain is impossible.",
            },
        ],
        "faq": [
            {
                "question": "The story has magic, aliens or talking animals. Is a sentence about them 'incorrect'?",
                "answer": (
                    "No. Judge inside the story: if the line says the dragon spoke, then 'The dragon said "
                    "something' is definitely correct."
                ),
            },
            {
                "question": "I don't know who the characters are or what happened earlier. Is that a problem?",
                "answer": (
                    "No. Use the names from the line, or write 'the woman', 'the stranger'. Don't guess at plot "
                    "you cannot see, except in your 'might be correct' sentence, where a guess is what we want."
                ),
            },
            {
                "question": "The line is a character speaking. Is what they say true?",
                "answer": (
                    "Only that they said it is certain. If Sam says he is tired, 'Sam claimed to be tired' is "
                    "definitely correct, but 'Sam was tired' only might be: characters can lie or be wrong."
                ),
            },
        ],
    },
    {
        "slug": "letters",
        "name": "Letters",
        "instructions": (
            "You will read one line from a letter, most often a fundraising letter that a charity or "
            "non-profit group sent to its supporters, and write three new sentences about it. The line tells "
            "you something about the letter: who is writing, what they report, what they ask for. Work only "
            "from the line and from ordinary knowledge of the world.\n\n"
            "Letters like these try to persuade. They may describe hardship or make strong appeals; the views "
            "are the writers', not the researchers'. You need not agree with the letter, only write sentences "
            "that relate to what it says.\n\n"
            "Your sentences will be used in research on how computers understand English. Thank you for "
            "taking part! The FAQ answers the usual questions."
        ),
        "entailment_prompt": "Write one sentence that is definitely correct about the letter.",
        "neutral_prompt": "Write one sentence that might be correct about the letter.",
        "contradiction_prompt": "Write one sentence that is definitely incorrect about the letter.",
        "faq_intro": "Questions about writing sentences for lines from letters.",
        "examples": [
            {
                "label": "entailment",
                "premise": "Your gift of $25 last winter helped us keep the shelter's kitchen open seven days a week.",
                "hypothesis": "The person reading the letter has given money to the shelter.",
                "explanation": "The letter thanks the reader for a gift, so this must be true.",
            },
            {
                "label": "neutral",
                "premise": (
                    "This spring our volunteers planted more than four hundred trees along the river trail, and "
                    "we need your help to water them through the summer."
                ),
                "hypothesis": "Most of the volunteers are retired.",
                "explanation": "The letter says nothing about who the volunteers are.",
            },
            {
                "label": "contradiction",
                "premise": (
                    "For the first time in our forty-year history, the library's reading program for children "
                    "has a waiting list."
                ),
                "hypothesis": "The children's reading program has more places than it has children wanting to join.",
                "explanation": "A waiting list means more children want to join than there are places.",
            },
        ],
        "faq": [
            {
                "question": "Who are 'we', 'I' and 'you' in the letter?",
                "answer": (
                    "'We' and 'I' are usually the organisation or the person who signs for it. 'You' is the "
                    "person the letter was sent to: a supporter or a possible donor."
                ),
            },
            {
                "question": "The letter makes big claims ('your gift will change lives'). Are they facts?",
                "answer": (
                    "Take the letter's statements as what the letter says. 'The letter says gifts change lives' "
                    "is definitely correct; whether they really do is not for you to judge here."
                ),
            },
            {
                "question": "Should my sentences sound like a letter?",
                "answer": "No. Plain sentences about the letter and what it says are best.",
            },
        ],
    },
    {
        "slug": "nineeleven",
        "name": "9/11",
        "instructions": (
            "You will read one line from the official report of the national commission that investigated "
            "the terrorist attacks of September 11, 2001, and write three new sentences about it. The line "
            "describes events, decisions or people connected with the attacks. Work only from the line and "
            "from general knowledge about the world.\n\n"
            "Some lines speak directly about the attacks and the people who died, and reading them can be "
            "upsetting. Please write plainly and respectfully: no jokes, no graphic details that are not in the "
            "line, and no guesses about real people beyond what the line says. If the material is hard for "
            "you, you may stop at any time; the tasks you have already submitted still count. Even if you "
            "remember these events well, base your sentences on the line itself.\n\n"
            "Your sentences will be used in research on how computers understand English. Thank you for "
            "taking part! The FAQ answers the usual questions."
        ),
        "entailment_prompt": "Write one sentence that is definitely correct about the events described in the line.",
        "neutral_prompt": "Write one sentence that might be correct about the events described in the line.",
        "contradiction_prompt": "Write one sentence that is definitely incorrect about the events described in the line.",
        "faq_intro": "Questions about writing sentences for lines from the report on the September 11 attacks.",
        "examples": [
            {
                "label": "entailment",
                "premise": (
                    "The commission's staff interviewed more than a thousand people in several countries while "
                    "preparing the report."
                ),
                "hypothesis": "The commission spoke with people outside the United States.",
                "explanation": "Interviews in several countries must include some abroad.",
            },
            {
                "label": "neutral",
                "premise": (
                    "Air traffic controllers were among the first to notice that one of the flights had stopped "
                    "answering their calls."
                ),
                "hypothesis": "The controllers had dealt with a silent aircraft before that day.",
                "explanation": "The line says nothing about their earlier experience.",
            },
            {
                "label": "contradiction",
                "premise": (
                    "By mid-morning, aviation authorities had ordered every civilian aircraft over the United "
                    "States to land."
                ),
                "hypothesis": "Civilian planes kept flying normally across the country all day.",
                "explanation": "All civilian aircraft were ordered down, so normal flying all day cannot be true.",
            },
        ],
        "faq": [
            {
                "question": "This material upsets me. Do I have to go on?",
                "answer": (
                    "No. You may stop at any time: close the page or leave the study. Tasks you have already "
                    "submitted count and are paid, and the line you were given goes back to the pool."
                ),
            },
            {
                "question": "Can I use what I remember or have read about September 11?",
                "answer": (
                    "Only knowledge that most people share. Judge from the line: someone who reads only the line "
                    "should be able to agree with your label."
                ),
            },
            {
                "question": "How should I write about the victims, the rescuers and the attackers?",
                "answer": (
                    "Plainly and respectfully, as a careful news report would. Don't add graphic details, insults "
                    "or speculation about named people."
                ),
            },
        ],
    },
    {
        "slug": "captions",
        "name": "Captions (photo descriptions, SNLI-style)",
        "instructions": (
            "You will read a caption that someone wrote for a photograph, and write three new captions for the "
            "same photo. You will not see the photo itself. Take the caption as an accurate description of the "
            "picture, and use only the caption and what you know about the world.\n\n"
            "Picture the scene the caption describes. The people and things in your captions are the ones in "
            "that photo: if the caption mentions a dog, your captions are about that same dog.\n\n"
            "Your captions will be used in research on how computers understand English. Thank you for taking "
            "part! The FAQ answers the usual questions."
        ),
        "entailment_prompt": "Write one new caption that is certainly true of the photo described.",
        "neutral_prompt": "Write one new caption that may or may not be true of the photo described.",
        "contradiction_prompt": "Write one new caption that cannot be true of the photo described.",
        "faq_intro": "Questions about writing captions for a photo you cannot see.",
        "examples": [
            {
                "label": "entailment",
                "premise": "A girl in a yellow raincoat jumps into a puddle on a city sidewalk.",
                "hypothesis": "A child is outside.",
                "explanation": "A girl on a sidewalk is a child outdoors.",
            },
            {
                "label": "neutral",
                "premise": "Two men are carrying a sofa up a narrow staircase.",
                "hypothesis": "The men are moving into a new apartment.",
                "explanation": "They might be moving in, or delivering the sofa to someone else.",
            },
            {
                "label": "contradiction",
                "premise": "An old woman is feeding pigeons from a park bench.",
                "hypothesis": "The woman is asleep in her bed.",
                "explanation": "She cannot be on a park bench feeding birds and asleep in bed at once.",
            },
        ],
        "faq": [
            {
                "question": "Is the person or thing in my caption the same one as in the caption I was given?",
                "answer": (
                    "Yes: both captions describe one photo, so 'a man' in your caption is the man in the photo. "
                    "That is why 'A dog is sleeping' cannot be true when the photo shows a dog running."
                ),
            },
            {
                "question": "Can my caption be just a phrase, like 'A busy street'?",
                "answer": "Yes. Short captions and phrases are fine, as long as it is clear which kind they are.",
            },
        ],
    },
]

# Family of each genre: MultiNLI §2.1; captions (SNLI) has its own.
GENRES: list[dict[str, Any]] = [
    {
        "slug": "fiction",
        "name": "Fiction",
        "is_training": True,
        "family": "fiction",
        "description": "Contemporary fiction (crime, mystery, humour, western, adventure, science fiction, fantasy), 1912–2010.",
    },
    {
        "slug": "government",
        "name": "Government",
        "is_training": True,
        "family": "nonfiction",
        "description": "Reports, speeches, letters and press releases from public government websites.",
    },
    {
        "slug": "slate",
        "name": "Slate",
        "is_training": True,
        "family": "nonfiction",
        "description": "Popular-culture articles from the Slate Magazine archive, 1996–2000.",
    },
    {
        "slug": "telephone",
        "name": "Telephone",
        "is_training": True,
        "family": "spoken",
        "description": "Transcribed two-party telephone conversations (Switchboard, 1990–1991).",
    },
    {
        "slug": "travel",
        "name": "Travel",
        "is_training": True,
        "family": "nonfiction",
        "description": "Travel guides (Berlitz, early 2000s).",
    },
    {
        "slug": "nineeleven",
        "name": "9/11",
        "is_training": False,
        "family": "nineeleven",
        "description": "The report of the national commission on the September 11, 2001 attacks (2004).",
    },
    {
        "slug": "facetoface",
        "name": "Face-to-face",
        "is_training": False,
        "family": "spoken",
        "description": "Transcribed face-to-face conversations from the Charlotte, NC area (early 2000s).",
    },
    {
        "slug": "letters",
        "name": "Letters",
        "is_training": False,
        "family": "letters",
        "description": "Fundraising letters from non-profit organisations (late 1990s–early 2000s).",
    },
    {
        "slug": "oup",
        "name": "OUP",
        "is_training": False,
        "family": "nonfiction",
        "description": "Oxford University Press non-fiction on the textile industry and child development.",
    },
    {
        "slug": "verbatim",
        "name": "Verbatim",
        "is_training": False,
        "family": "nonfiction",
        "description": "Short pieces about language and linguistics for non-specialists (Verbatim, 1990 and 1996).",
    },
    {
        "slug": "captions",
        "name": "Captions",
        "is_training": True,
        "family": "captions",
        "description": "Photo captions as in SNLI (Flickr30k): each premise describes a photo.",
    },
]
